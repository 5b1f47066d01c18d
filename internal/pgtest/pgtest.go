// Package pgtest gives tests a PostgreSQL server of their own: a throwaway
// cluster made by initdb in a temporary directory and served on a unix
// socket there, stopped and removed when the test ends; or, when
// $AGENTGRAPH_TEST_POSTGRES names one, a server that is already running.
//
// Tests that need PostgreSQL skip when neither is available, except under CI
// (the CI environment variable set), where a missing server fails the test.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the connection string of a
// running server to use instead of starting one. The role it names must be
// able to create databases.
const EnvURL = "AGENTGRAPH_TEST_POSTGRES"

// Server is a PostgreSQL server a test can use.
type Server struct {
	// URL is the connection string of the server's maintenance database.
	URL string

	dir    string       // data, socket and log of a started server
	stopFn func() error // stops a started server
}

// Option configures Start.
type Option func(*config)

type config struct{ durable bool }

// Durable makes a started server flush its writes to disk at every commit,
// as a production server does. Without it the server skips fsync, which is
// what tests want; benchmarks that compare durable storage ask for Durable.
// A server named by EnvURL is used as configured.
func Durable() Option { return func(c *config) { c.durable = true } }

// Start returns a server for tb: the one $AGENTGRAPH_TEST_POSTGRES names, or
// a new one started from the PostgreSQL binaries found on $PATH or under
// /usr/lib/postgresql (Debian's postgresql package), which tb.Cleanup stops
// and removes. Without either, Start skips tb, or fails it when $CI is set.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	if u := os.Getenv(EnvURL); u != "" {
		return &Server{URL: u}
	}
	bin, err := binDir()
	if err != nil {
		unavailable(tb, err)
	}
	s, err := start(bin, c)
	if s != nil {
		// Registered before checking err: a half-started server is stopped too.
		tb.Cleanup(func() {
			if err := s.stop(); err != nil {
				tb.Errorf("pgtest: stopping the server: %v", err)
			}
		})
	}
	if err != nil {
		tb.Fatalf("pgtest: starting PostgreSQL: %v", err)
	}
	return s
}

func unavailable(tb testing.TB, err error) {
	tb.Helper()
	msg := fmt.Sprintf("pgtest: no PostgreSQL: %v; install Debian's postgresql package or set %s to a server's URL", err, EnvURL)
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest major version: sort numerically by the version directory.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("initdb and postgres are neither on $PATH nor under /usr/lib/postgresql/*/bin")
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start makes a cluster in a new temporary directory and runs postgres on
// it. It returns the server, when there is something to stop or remove,
// even with an error.
func start(bin string, c config) (*Server, error) {
	// A short path: a unix socket's path must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	cred, err := serverUser()
	if err != nil {
		return s, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return s, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return s, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return s, err
	}
	defer logFile.Close()
	args := []string{"-D", data, "-k", dir, "-c", "listen_addresses=", "-c", "port=5432",
		"-c", "shared_buffers=32MB", "-c", "max_connections=200", "-c", "log_min_messages=warning"}
	if !c.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	srv := exec.Command(filepath.Join(bin, "postgres"), args...)
	srv.Stdout, srv.Stderr = logFile, logFile
	// Pdeathsig: a test binary that dies without cleaning up takes its
	// server with it (SIGQUIT is PostgreSQL's immediate shutdown).
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := srv.Start(); err != nil {
		return s, fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		srv.Wait()
		close(exited)
	}()
	s.stopFn = func() error {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown: end sessions, checkpoint, exit
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			srv.Process.Kill()
			<-exited
			return errors.New("postgres did not stop within 15 s of SIGINT; killed")
		}
		return nil
	}
	s.URL = "postgres://postgres@/postgres?sslmode=disable&host=" + url.QueryEscape(dir)
	if err := waitReady(s.URL, exited, 30*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return s, fmt.Errorf("%w\npostgres.log:\n%s", err, tail(log, 2000))
	}
	return s, nil
}

// serverUser returns the credentials to run PostgreSQL with, which refuses
// to run as root: the postgres user when there is one, else nobody. It
// returns nil when the process is not root.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run the server as")
}

func waitReady(connURL string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, connURL)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited while starting (last connection error: %v)", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return bytes.TrimSpace(b)
}

func (s *Server) stop() error {
	var err error
	if s.stopFn != nil {
		err = s.stopFn()
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// NewDatabase creates an empty database on s for tb and returns its
// connection string; tb.Cleanup drops it.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "agentgraph_test_" + randomHex(6)
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		tb.Fatalf("pgtest: connecting to %s: %v", redact(s.URL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"); err != nil {
		tb.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.URL)
		if err != nil {
			tb.Errorf("pgtest: dropping database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return withDatabase(s.URL, name)
}

// withDatabase returns connURL naming database name instead.
func withDatabase(connURL, name string) string {
	if u, err := url.Parse(connURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	// A keyword/value string: the last dbname wins.
	return connURL + " dbname=" + name
}

func redact(connURL string) string {
	if u, err := url.Parse(connURL); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
	}
	if strings.Contains(connURL, "password") {
		return "(connection string with a password)"
	}
	return connURL
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
