// Command grpcgolatency makes unary CRI calls with grpc-go, the gRPC stack kubelet uses, against
// several unix sockets interleaved round by round (so load changes on a shared machine hit every
// series alike), and prints p50 and p90 per series, their ratio to the first, and the size of
// the series' last reply. It exits 1 with the status at the first call that fails. Built by
// io.cri4j.testing.real.GrpcGoClient (tests) and benchmarks/go/run.sh (benchmarks) with Debian's
// golang-go and golang-google-grpc-dev.
//
//	grpcgolatency [-method M] [-request HEX] [-rounds R] [-calls C] [-warmup W] [-shared] [-timeout D]
//	    NAME=SOCKET[@HEX][#METHOD]...
//
// A series' own @HEX request and #METHOD replace -request and -method; @/PATH reads the request
// from a file (for requests too large for a command line). Each series has a
// connection of its own, unless -shared: then series on the same socket share one, in the order
// given. Requests and responses stay bytes (a codec that neither encodes nor decodes), as the
// proxy's relay sees them.
package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// rawCodec hands messages over as the bytes they are; named "proto" so the content-type is
// application/grpc as kubelet sends it.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(b []byte, v interface{}) error {
	p := v.(*[]byte)
	*p = append((*p)[:0], b...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

type series struct {
	name    string
	conn    *grpc.ClientConn
	method  string
	request []byte
	replied int
	took    []time.Duration
}

func main() {
	method := flag.String("method", "/runtime.v1.RuntimeService/Version", "the full method name")
	request := flag.String("request", "", "the request message in hex (default: empty)")
	rounds := flag.Int("rounds", 20, "rounds; each runs every series in turn")
	calls := flag.Int("calls", 1000, "calls per series per round")
	warmup := flag.Int("warmup", 5000, "warm-up calls per series")
	shared := flag.Bool("shared", false, "series on the same socket share one connection")
	timeout := flag.Duration("timeout", 2*time.Minute, "deadline of each call (kubelet's default)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: grpcgolatency [flags] NAME=SOCKET[@HEX]...")
		os.Exit(2)
	}
	var all []*series
	conns := map[string]*grpc.ClientConn{}
	for _, arg := range flag.Args() {
		kv := strings.SplitN(arg, "=", 2)
		if len(kv) != 2 {
			fail("not NAME=SOCKET: %s", arg)
		}
		path, reqHex, m := kv[1], *request, *method
		if at := strings.LastIndex(path, "#"); at >= 0 {
			path, m = path[:at], path[at+1:]
		}
		if at := strings.LastIndex(path, "@"); at >= 0 {
			path, reqHex = path[:at], path[at+1:]
		}
		var req []byte
		var err error
		if strings.HasPrefix(reqHex, "/") {
			req, err = ioutil.ReadFile(reqHex)
		} else {
			req, err = hex.DecodeString(reqHex)
		}
		if err != nil {
			fail("request of %s: %v", kv[0], err)
		}
		conn := conns[path]
		if conn == nil || !*shared {
			conn, err = grpc.Dial(path, grpc.WithInsecure(),
				grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", addr)
				}))
			if err != nil {
				fail("%s: %v", kv[0], err)
			}
			conns[path] = conn
		}
		all = append(all, &series{name: kv[0], conn: conn, method: m, request: req})
	}
	var reply []byte
	call := func(s *series) {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		if err := s.conn.Invoke(ctx, s.method, &s.request, &reply,
			grpc.ForceCodec(rawCodec{})); err != nil {
			fail("%s: %v", s.name, err)
		}
		s.replied = len(reply)
	}
	for i := 0; i < *warmup; i++ {
		for _, s := range all {
			call(s)
		}
	}
	for r := 0; r < *rounds; r++ {
		for _, s := range all {
			for i := 0; i < *calls; i++ {
				t := time.Now()
				call(s)
				s.took = append(s.took, time.Since(t))
			}
		}
	}
	base50, base90 := quantile(all[0].took, 0.5), quantile(all[0].took, 0.9)
	for _, s := range all {
		p50, p90 := quantile(s.took, 0.5), quantile(s.took, 0.9)
		fmt.Printf("%-18s p50 %7.1f us  p90 %7.1f us  ratio p50 %.2f  p90 %.2f  reply %d B\n",
			s.name, p50, p90, p50/base50, p90/base90, s.replied)
	}
}

func quantile(d []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) / 1000
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "grpcgolatency: "+format+"\n", args...)
	os.Exit(1)
}
