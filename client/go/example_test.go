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

// Compiled, not run: the fastest shape for many IDs (bench/go_client.sh's
// "gocallback"): a chain of NextIDsFunc calls per slot in flight, on one
// lane per pooled connection, each callback starting the next call.
func ExampleLane() {
	c, err := seqd.New(seqd.Options{Endpoints: []string{"127.0.0.1:7070"}, ConnsPerEndpoint: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ids := make(chan int64, 1024)
	for i := 0; i < 4; i++ {
		lane := c.Lane()
		for j := 0; j < 16; j++ { // 16 calls in flight per connection
			var next func([]seqd.Range, error)
			next = func(rs []seqd.Range, err error) {
				// On the connection's reader: never block here.
				if err != nil {
					log.Print(err)
					return
				}
				select {
				case ids <- rs[0].First:
					lane.NextIDsFunc(context.Background(), "n_order", 1, next)
				default: // the consumer is full: this chain ends
				}
			}
			lane.NextIDsFunc(context.Background(), "n_order", 1, next)
		}
	}
	fmt.Println(<-ids)
}
