// grpc_go_peer: gRPC peers for the tests on grpc-go (Debian's golang-google-grpc-dev), the
// runtime most Go services and Kubernetes components use, beside grpc_peer.py's grpcio. Messages
// are raw bytes (a codec of its own: no protoc, no generated code), as grpc_peer.py's are.
// Built offline in GOPATH mode (`make grpc-go-peer`):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o .build-grpcgo/grpc_go_peer Tests/ProxyTests/Fixtures/grpc_go_peer/main.go
//
// grpc_go_peer server [-tls-cert FILE -tls-key FILE]
//
//	A server on 127.0.0.1 (h2c, or TLS with the files); prints "PORT <n>". Methods of test.Orders:
//	Get (unary) answers "auth=<every authorization value, joined by ,>"; Chat (bidirectional)
//	answers each message with "echo <message>". Ends after 300 s.
//
// grpc_go_peer client TARGET MODE [COUNT] [-authority A] [-tls -ca FILE]
//
//	Calls TARGET (host:port) with grpc-go's defaults (its flow control and BDP pings on); the
//	environment's HTTPS_PROXY applies as it does for any grpc-go app. Every call carries the app's
//	own "authorization: Bearer app-own". MODE:
//	unary     one Get call; prints its answer.
//	pingpong  one Chat call as a conversation: a message, then its answer before the next, COUNT
//	          times (default 100); prints "pingpong <answers> ok=<true|false>".
//	load      Get calls back to back on one connection for COUNT seconds (default 60); prints
//	          "calls <n> failures <n>" and the first failures' codes and messages.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// raw is a codec whose messages are the bytes themselves (*[]byte).
type raw struct{}

func (raw) Name() string { return "proto" }

func (raw) Marshal(v interface{}) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return nil, fmt.Errorf("raw codec: %T is not *[]byte", v)
}

func (raw) Unmarshal(data []byte, v interface{}) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: %T is not *[]byte", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// String is what the deprecated grpc.Codec interface (grpc.CustomCodec) also asks for.
func (raw) String() string { return "proto" }

func serve(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	cert := fs.String("tls-cert", "", "certificate PEM")
	key := fs.String("tls-key", "", "key PEM")
	fs.Parse(args)
	options := []grpc.ServerOption{grpc.CustomCodec(raw{}), grpc.UnknownServiceHandler(handle)}
	if *cert != "" {
		creds, err := credentials.NewServerTLSFromFile(*cert, *key)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		options = append(options, grpc.Creds(creds))
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("PORT %d\n", listener.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	server := grpc.NewServer(options...)
	time.AfterFunc(300*time.Second, server.Stop)
	server.Serve(listener)
}

// handle serves every method of test.Orders.
func handle(_ interface{}, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	switch method {
	case "/test.Orders/Get":
		var request []byte
		if err := stream.RecvMsg(&request); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(stream.Context())
		reply := []byte("auth=" + strings.Join(md.Get("authorization"), ","))
		return stream.SendMsg(&reply)
	case "/test.Orders/Chat":
		for {
			var message []byte
			if err := stream.RecvMsg(&message); err != nil {
				return nil // the client's end (io.EOF) or its cancel
			}
			reply := append([]byte("echo "), message...)
			if err := stream.SendMsg(&reply); err != nil {
				return err
			}
		}
	}
	return status.Errorf(12, "no method %s", method) // UNIMPLEMENTED
}

func client(args []string) {
	target, mode := args[0], args[1]
	args = args[2:]
	count := -1
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		count, _ = strconv.Atoi(args[0])
		args = args[1:]
	}
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	authority := fs.String("authority", "", ":authority to send")
	useTLS := fs.Bool("tls", false, "TLS")
	ca := fs.String("ca", "", "with -tls: the CA file to trust")
	fs.Parse(args)
	options := []grpc.DialOption{grpc.WithBlock(), grpc.WithDefaultCallOptions(grpc.ForceCodec(raw{}))}
	if *authority != "" {
		options = append(options, grpc.WithAuthority(*authority))
	}
	if *useTLS {
		host, _, _ := net.SplitHostPort(target)
		creds, err := credentials.NewClientTLSFromFile(*ca, host)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		options = append(options, grpc.WithTransportCredentials(creds))
	} else {
		options = append(options, grpc.WithInsecure())
	}
	dialContext, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(dialContext, target, options...)
	if err != nil {
		fmt.Println("error dial", err)
		return
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer app-own")
	switch mode {
	case "unary":
		callContext, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		request, reply := []byte("order"), []byte{}
		if err := conn.Invoke(callContext, "/test.Orders/Get", &request, &reply); err != nil {
			fmt.Println("error", status.Code(err), status.Convert(err).Message())
			return
		}
		fmt.Println(string(reply))
	case "pingpong":
		if count < 0 {
			count = 100
		}
		fmt.Println(pingpong(ctx, conn, count))
	case "load":
		if count < 0 {
			count = 60
		}
		load(ctx, conn, time.Duration(count)*time.Second)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}

func pingpong(ctx context.Context, conn *grpc.ClientConn, rounds int) string {
	callContext, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stream, err := conn.NewStream(callContext, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/test.Orders/Chat")
	if err != nil {
		return fmt.Sprintf("error %s %s", status.Code(err), status.Convert(err).Message())
	}
	answers, ok := 0, true
	for i := 0; i < rounds; i++ {
		message := []byte(strconv.Itoa(i))
		if err := stream.SendMsg(&message); err != nil {
			return fmt.Sprintf("pingpong %d error send %v", answers, err)
		}
		var reply []byte
		if err := stream.RecvMsg(&reply); err != nil {
			return fmt.Sprintf("pingpong %d error %s %s", answers, status.Code(err), status.Convert(err).Message())
		}
		answers++
		ok = ok && string(reply) == "echo "+strconv.Itoa(i)
	}
	if err := stream.CloseSend(); err != nil {
		ok = false
	}
	var extra []byte
	if err := stream.RecvMsg(&extra); err == nil {
		ok = false // a message beyond the answers
	}
	return fmt.Sprintf("pingpong %d ok=%t", answers, ok)
}

func load(ctx context.Context, conn *grpc.ClientConn, duration time.Duration) {
	calls, failures := 0, 0
	var first []string
	request := []byte("order")
	for end := time.Now().Add(duration); time.Now().Before(end); {
		callContext, cancel := context.WithTimeout(ctx, 10*time.Second)
		var reply []byte
		err := conn.Invoke(callContext, "/test.Orders/Get", &request, &reply)
		cancel()
		calls++
		if err == nil && string(reply) != "auth=Bearer abc" {
			err = fmt.Errorf("answer %q", reply)
		}
		if err != nil {
			failures++
			if len(first) < 3 {
				first = append(first, fmt.Sprintf("%s %s", status.Code(err), status.Convert(err).Message()))
			}
		}
	}
	fmt.Printf("calls %d failures %d\n", calls, failures)
	for _, failure := range first {
		fmt.Println("failure", failure)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpc_go_peer server|client ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		serve(os.Args[2:])
	case "client":
		client(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: grpc_go_peer server|client ...")
		os.Exit(2)
	}
}
