package seqd

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// BenchmarkNextID: GOMAXPROCS-independent load of SEQD_BENCH_CONNS
// connections (default 4) × SEQD_BENCH_DEPTH calls in flight each (default
// 16), NEXT_IDS count 1, against a seqd at SEQD_BENCH_ADDR or one started
// here. Reports IDs/s.
func BenchmarkNextID(b *testing.B) {
	addr := os.Getenv("SEQD_BENCH_ADDR")
	if addr == "" {
		addr = testseqd.Start(b).Addr()
	}
	conns, depth := envInt("SEQD_BENCH_CONNS", 4), envInt("SEQD_BENCH_DEPTH", 16)
	c, err := New(Options{Endpoints: []string{addr}, ConnsPerEndpoint: conns})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.NextID(ctx, "n_bench"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/(conns*depth) + 1
	for g := 0; g < conns*depth; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := c.NextID(ctx, "n_bench"); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*conns*depth)/time.Since(start).Seconds(), "ids/s")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
