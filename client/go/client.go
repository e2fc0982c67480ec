// Package seqd is a Go client for seqd's binary protocol (docs/protocol.md):
// segment IDs, contiguous blocks, snowflake IDs, max and min seqs, and the
// chat message store.
//
// A Client pipelines calls over a small pool of connections per endpoint
// (responses are matched by request id and may come back in any order),
// fails over across endpoints, retries the retryable codes, and honours
// the context of every call. It is safe for concurrent use; make one per
// process and share it.
//
// Contexts: every call takes a context, and its deadline is the call's
// limit, retries included: a call retries a retryable failure until it
// succeeds or its context ends (then a CodeTimeout error that matches
// context.DeadlineExceeded, or CodeCancelled matching context.Canceled).
// A context without a deadline gets Options.RetryBudget (10s by default)
// as the call's limit instead. A nil context is refused with
// CodeInvalidArgument (use context.Background() or context.TODO()).
//
// Retry rules (the C++ client's, client/include/seqd/client.h):
//   - Each attempt is bounded by Options.CallTimeout and by what is left of
//     the call's limit. Options.MaxAttempts, when set, caps the attempts.
//   - Retried: connection loss or a refused connect (UNAVAILABLE), an
//     attempt's timeout (TIMEOUT), STORE_UNAVAILABLE, SHUTTING_DOWN and
//     NOT_SERVING. Every other code is about the request itself and is
//     returned at once.
//   - A retry goes to the next endpoint in order, after a jittered
//     exponential backoff (uniform in [b/2, b], b = BackoffInitial doubled
//     per attempt, at most BackoffMax), cut to half the time left when
//     the budget would end first, unless ctx ends first.
//   - Retrying NEXT_IDS / NEXT_BLOCK / SNOWFLAKE is safe: the IDs of a lost
//     answer are skipped, never handed out twice.
//   - SEND is re-sent byte for byte, with the same client message id: the
//     server answers a re-send of a message it stored with the first seq and
//     Duplicate = true. STORE_UNAVAILABLE on SEND means "maybe stored";
//     the re-send resolves it. If Send still fails, re-send the same
//     OutgoingMessage later; never give it a new client message id.
//
// Failover: a Client starts at a round-robin position among the endpoints
// (clients of one process spread over the servers) and sticks to the
// endpoint that answered last, so its IDs of a key come from one server and
// increase. A connection failure marks its endpoint down for a backoff
// (doubling per consecutive failure, at most BackoffMax); calls move on to
// the next endpoint. If every endpoint is down, the one whose backoff ends
// first is tried anyway. A call whose attempt timed out while nothing at
// all was read on its connection takes the connection for stalled (a hung,
// stopped or black-holed server): it is closed, and its endpoint marked
// down for at least CallTimeout. Failures count until the endpoint answers
// again (a connect is no proof: a stopped server's kernel accepts it).
package seqd

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Client. Zero values take the defaults shown.
type Options struct {
	// Endpoints: "host:port" or "[v6addr]:port", in failover order. At
	// least one.
	Endpoints []string
	// Token: a token's secret (docs/security.md), sent as AUTH, the first
	// frame of every connection; "" sends none. A refused token fails calls
	// with CodeUnauthenticated (not retried); the library reads no
	// environment.
	Token string
	// TLSConfig: when set, every connection does a TLS handshake with this
	// configuration (cloned; ServerName defaults to the endpoint's host) and
	// verifies the server before its first frame. A failed handshake fails
	// the attempt like a refused connect (UNAVAILABLE, next endpoint).
	TLSConfig *tls.Config
	// ConnsPerEndpoint: pooled connections per endpoint. Calls go to the
	// one that delivered answers last while it has fewer than 128 in
	// flight (one batch per round trip for all of them), else round robin
	// over the pool. Default 2, at most 64.
	ConnsPerEndpoint int
	// CallTimeout: per attempt. Default 1s.
	CallTimeout time.Duration
	// MaxAttempts: a cap on the attempts of one call. 0 (the default): no
	// cap; the call's context deadline, or RetryBudget, ends its retries.
	MaxAttempts int
	// RetryBudget: how long a call whose context has no deadline may take
	// in all, attempts and backoffs together; then it fails with
	// CodeTimeout. A context's deadline, shorter or longer, takes its
	// place. Default 10s.
	RetryBudget time.Duration
	// RouteByShard: cluster mode (docs/cluster.md): send keyed calls
	// straight to the key's owner as the shard map says, with NO_FORWARD;
	// on WRONG_OWNER fetch the map again and retry the ordinary way.
	// Implies WatchPlacement (a rise of the placement version refreshes the
	// map too).
	RouteByShard bool
	// WatchPlacement: store groups (docs/cluster.md): every connection asks
	// for the placement version (op PLACEMENT, after AUTH), which servers
	// with store groups then tell again before their first answer after it
	// rose (Client.PlacementVersion). A server before the op answers it
	// UNKNOWN_OPCODE (ignored). Off: no frame is added.
	WatchPlacement bool
	// Prefetch: local prefetch batch size per key for NextID (and
	// NextIDs(key, 1)), 0 = off (the default). See NextID.
	Prefetch int
	// ConnectTimeout: resolve + connect + TLS + AUTH, per attempt. Default 1s.
	ConnectTimeout time.Duration
	// BackoffInitial: first retry delay (jittered). Default 20ms.
	BackoffInitial time.Duration
	// BackoffMax: cap of the retry delay and of an endpoint's down time.
	// Default 1s.
	BackoffMax time.Duration

	// Dial, when set, opens every connection instead of a net.Dialer,
	// called with network "tcp" and an endpoint as listed in Endpoints,
	// bounded by ctx (ConnectTimeout and the call's context). TLS and AUTH
	// still follow on what it returns. For a unix socket, a proxy or a
	// dialer with its own settings (e.g. &net.Dialer{KeepAlive: ...}):
	//
	//	Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
	//		var d net.Dialer
	//		return d.DialContext(ctx, "unix", "/run/seqd.sock")
	//	},
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Logger receives the client's log records (see Logger); nil: none.
	// A *slog.Logger fits as it is.
	Logger Logger
	// OnRetry, when set, is called for every failed attempt that is tried
	// again, before its backoff, on the call's goroutine. It must not
	// block. (Also logged at Warn and counted in Metrics.Retries.)
	OnRetry func(RetryEvent)
	// OnFailover, when set, is called when a call's next attempt goes to
	// another endpoint than its failed one, on the call's goroutine. It
	// must not block. (Also logged at Warn and counted in
	// Metrics.Failovers.)
	OnFailover func(FailoverEvent)
	// OnPlacementVersion, when set, is called with each placement version
	// (store groups: docs/cluster.md) a server tells above every one told
	// before (see Client.PlacementVersion; WatchPlacement), on a
	// connection's reader goroutine. It must not block.
	OnPlacementVersion func(version int64)
}

// Client is a seqd client. Safe for concurrent use by many goroutines.
type Client struct {
	opts   Options
	router router // nil unless Options.RouteByShard (and routing is built in)

	// poolPush receives pushes on pooled connections (none unless a
	// SUBSCRIBE went through the pool). Set before the first call.
	poolPush func(op byte, payload []byte)

	epMu sync.RWMutex
	eps  []*endpoint // Options.Endpoints first, in order; then added owners
	// listed: Options.Endpoints' endpoints, in order (eps' first ones).
	// Set by New, never changed: read without epMu on every call.
	listed   []*endpoint
	epByAddr map[string]*endpoint

	current atomic.Int32 // index (into Options.Endpoints) where new calls start

	connMu sync.Mutex
	conns  map[*conn]struct{}
	closed bool

	closing   chan struct{} // closed by Close
	closeOnce sync.Once

	cacheMu sync.Mutex
	cache   map[string]*keyCache // Options.Prefetch

	// extras lets other files of the package keep per-client state (the
	// router, the subscription keeper) without touching this struct.
	extras sync.Map

	counters counters // Metrics

	placementVersion atomic.Int64 // PlacementVersion
}

var roundRobin atomic.Uint32

// New validates opts and returns a Client. It connects lazily, at the
// first call.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errorf(CodeInvalidArgument, "no endpoints")
	}
	for _, e := range opts.Endpoints {
		host, port, err := net.SplitHostPort(e)
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return nil, errorf(CodeInvalidArgument, "endpoint %q is not host:port or [v6addr]:port", e)
		}
	}
	if opts.ConnsPerEndpoint == 0 {
		opts.ConnsPerEndpoint = 2
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = time.Second
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = noAttemptCap
	}
	if opts.RetryBudget == 0 {
		opts.RetryBudget = defaultRetryBudget
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = time.Second
	}
	if opts.BackoffInitial == 0 {
		opts.BackoffInitial = 20 * time.Millisecond
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = time.Second
	}
	switch {
	case opts.ConnsPerEndpoint < 1 || opts.ConnsPerEndpoint > 64:
		return nil, errorf(CodeInvalidArgument, "ConnsPerEndpoint must be 1..64")
	case opts.CallTimeout < 0 || opts.ConnectTimeout < 0 || opts.RetryBudget < 0:
		return nil, errorf(CodeInvalidArgument, "timeouts must be positive")
	case opts.MaxAttempts < 1:
		return nil, errorf(CodeInvalidArgument, "MaxAttempts must be 0 (no cap) or more")
	case opts.BackoffInitial < 0 || opts.BackoffMax < opts.BackoffInitial:
		return nil, errorf(CodeInvalidArgument, "need 0 <= BackoffInitial <= BackoffMax")
	case len(opts.Token) > maxAuthSecret:
		return nil, errorf(CodeInvalidArgument, "token longer than 256 bytes")
	case opts.Prefetch < 0 || opts.Prefetch > 0xFFFFFFFF:
		return nil, errorf(CodeInvalidArgument, "Prefetch out of range")
	}
	opts.Endpoints = append([]string(nil), opts.Endpoints...)
	c := &Client{opts: opts, epByAddr: map[string]*endpoint{}, conns: map[*conn]struct{}{},
		closing: make(chan struct{}), cache: map[string]*keyCache{}}
	for _, e := range opts.Endpoints {
		c.endpointFor(e)
	}
	if len(c.eps) != len(opts.Endpoints) {
		return nil, errorf(CodeInvalidArgument, "an endpoint is listed twice")
	}
	c.listed = append([]*endpoint(nil), c.eps...)
	c.current.Store(int32(roundRobin.Add(1) % uint32(len(opts.Endpoints))))
	if opts.RouteByShard && newRouter != nil {
		c.router = newRouter(c)
	}
	return c, nil
}

// Close closes every connection. Calls in flight and later calls fail with
// CodeCancelled. Safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.connMu.Lock()
		c.closed = true
		conns := make([]*conn, 0, len(c.conns))
		for cn := range c.conns {
			conns = append(conns, cn)
		}
		c.connMu.Unlock()
		for _, cn := range conns {
			cn.fail(errorf(CodeCancelled, "client closed"), false)
		}
	})
	return nil
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// callAny is a call not routed by key: invoke with no key.
func (c *Client) callAny(ctx context.Context, op byte, payload []byte) ([]byte, error) {
	return c.invoke(ctx, "", op, payload)
}

// callEnc is callKeyed with e's payload, once e.payload() has checked it
// can be sent.
func (c *Client) callEnc(ctx context.Context, key string, op byte, e *enc) ([]byte, error) {
	p, err := e.payload()
	if err != nil {
		return nil, err
	}
	return c.callKeyed(ctx, key, op, p)
}

// callKeyed is the full call path of a keyed op (see SEAMS in transport.go).
func (c *Client) callKeyed(ctx context.Context, key string, op byte, payload []byte) ([]byte, error) {
	return c.invoke(ctx, key, op, payload)
}

func opName(op byte) string {
	switch op {
	case opPing:
		return "PING"
	case opNextIDs:
		return "NEXT_IDS"
	case opNextBlock:
		return "NEXT_BLOCK"
	case opNextBlockOnce:
		return "NEXT_BLOCK_ONCE"
	case opMaxIDs:
		return "MAX_IDS"
	case opMaxIDsTimes:
		return "MAX_IDS_TIMES"
	case opUserSeqs:
		return "USER_SEQS"
	case opSetUserSeqs:
		return "SET_USER_SEQS"
	case opGetMinSeqs:
		return "GET_MIN_SEQS"
	case opSetMinSeqs:
		return "SET_MIN_SEQS"
	case opSnowflake:
		return "SNOWFLAKE"
	case opSend:
		return "SEND"
	case opPullRange:
		return "PULL_RANGE"
	case opMaxSeqs:
		return "MAX_SEQS"
	case opClusterMap:
		return "CLUSTER_MAP"
	}
	return "op 0x" + strconv.FormatUint(uint64(op), 16)
}
