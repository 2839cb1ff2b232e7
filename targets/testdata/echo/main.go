// Command echo is the smallest target the process tests can start: it
// answers GET / with what it was started with (its PORT, pid and the
// variables a target is handed), so a test can tell which instance served a
// request and what it was given. GET /healthz answers 200 (unless
// ECHO_NO_HEALTHZ=1) and GET /unready 503, for readiness probes that pass
// and fail; POST /exit exits at once. SIGTERM shuts it down
// gracefully and says so, so a test can tell a graceful stop from a kill.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	host := os.Getenv("ADDR")
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	// ECHO_NO_HEALTHZ=1: no health route at all, as many services have none.
	if os.Getenv("ECHO_NO_HEALTHZ") != "1" {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "ok")
		})
	}
	mux.HandleFunc("GET /unready", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	})
	// POST /exit?code=N exits at once with status N (default 3), saying so
	// on stderr first, before it answers: a target that dies on its own.
	mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			code = 3
		}
		fmt.Fprintf(os.Stderr, "echo: exiting with status %d as asked\n", code)
		os.Exit(code)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"port":        port,
			"pid":         os.Getpid(),
			"addr":        host,
			"databaseURL": os.Getenv("DATABASE_URL"),
			"greeting":    os.Getenv("ECHO_GREETING"),
		})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println("echo: serving on", ln.Addr())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sig := <-sigs
		fmt.Println("echo: stopping on", sig)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	// Serve returns as soon as Shutdown begins; requests in flight finish first.
	<-stopped
}
