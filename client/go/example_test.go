package seqd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	seqd "seqd.dev/go"
)

// Compiled, not run (no seqd here): the README's quick start.
func Example() {
	c, err := seqd.New(seqd.Options{Endpoints: []string{"127.0.0.1:7070", "127.0.0.1:7071"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()

	id, err := c.NextID(ctx, "n_order")
	switch {
	case errors.Is(err, seqd.ErrUnknownKey):
		log.Fatal("no such key: register it or use an auto-created prefix")
	case err != nil:
		log.Fatal(err)
	}
	first, last, err := c.NextBlock(ctx, "n_order", 10) // ten IDs with no hole
	fmt.Println(id, first, last, err)

	r, err := c.Send(ctx, seqd.OutgoingMessage{ConvID: "sg_1", SenderID: "u1", ClientMsgID: "c-1", Payload: []byte("hi")})
	if seqd.CodeOf(err).Retryable() {
		// Maybe stored: send the same message (same ClientMsgID) again later.
	}
	fmt.Println(r.Seq, r.Duplicate)
}
