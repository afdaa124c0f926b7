package swtch

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminServer serves /metrics (a private registry), /healthz,
// /debug/pprof/ and the job registry's /v1/jobs on the admin address;
// writes, and /v1/, need the bearer secret (authorize).
type adminServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// adminIdle is how long the admin port keeps a keep-alive connection that
// sends no request: a scraper comes back well within it, and connections
// a client opened and left (/metrics is open to anyone who reaches the
// port) do not pile up, each holding a goroutine and its buffers. Without
// it net/http keeps them for as long as the client does. A variable for
// the tests.
var adminIdle = 2 * time.Minute

func (s *Switch) startAdmin() (*adminServer, error) {
	ln, err := net.Listen("tcp", s.cfg.Admin)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: s.adminHandler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: adminIdle}
	a := &adminServer{srv: srv, addr: ln.Addr(), done: make(chan struct{})}
	go func() { a.srv.Serve(ln); close(a.done) }()
	return a, nil
}

// adminHandler routes the admin port's requests, behind authorize.
func (s *Switch) adminHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s), newRegistryCollector(s.registry))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.routeJobs(mux)
	return s.authorize(mux)
}

func (a *adminServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
	<-a.done
}
