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

// adminServer serves /metrics (a private registry), /healthz and
// /debug/pprof/ on the admin address.
type adminServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

func (s *Switch) startAdmin() (*adminServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s))
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
	ln, err := net.Listen("tcp", s.cfg.Admin)
	if err != nil {
		return nil, err
	}
	a := &adminServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, addr: ln.Addr(), done: make(chan struct{})}
	go func() { a.srv.Serve(ln); close(a.done) }()
	return a, nil
}

func (a *adminServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
	<-a.done
}
