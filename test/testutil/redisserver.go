// Package testutil (this file): a real redis-server for the quota store's
// tests, started on a random loopback port with its files in the test's
// temporary directory.
package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvRequireRedis names the variable that, when true (1), makes the tests that need a real
// redis-server fail instead of skipping when none is installed. make test
// sets it (after installing one), so CI cannot pass without them.
const EnvRequireRedis = "LLMGW_REQUIRE_REDIS"

// EnvRedisServer names the redis-server (or valkey-server) binary to run;
// default: the first of those on PATH.
const EnvRedisServer = "LLMGW_REDIS_SERVER"

// RedisServer is a real redis-server the test started on a loopback port,
// with its data directory in the test's temporary directory.
type RedisServer struct {
	t        testing.TB
	bin, dir string
	port     int
	// Password is what the server requires ("" for none).
	Password string
	cmd      *exec.Cmd
	exited   chan struct{}
}

func redisBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvRedisServer); p != "" {
		return p
	}
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "no redis-server or valkey-server on PATH (apt-get install redis-server; make test installs it)"
	if v := os.Getenv(EnvRequireRedis); v == "1" || v == "true" {
		t.Fatalf("%s, and %s is set", why, EnvRequireRedis)
	}
	t.Skip(why)
	return ""
}

// StartRedis starts a redis-server that requires password (none when
// empty) and stops it when the test ends.
func StartRedis(t testing.TB, password string) *RedisServer {
	t.Helper()
	s := &RedisServer{t: t, bin: redisBinary(t), dir: t.TempDir(), Password: password}
	// A free port can be taken between picking and binding: try a few.
	var err error
	for range 5 {
		s.port = freeLoopbackPort(t)
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// URL is the server's address as a redis:// URL.
func (s *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.port) }

// start runs the server on s.port and waits until it answers PING.
func (s *RedisServer) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(s.dir, "redis.log")}
	if s.Password != "" {
		args = append(args, "--requirepass", s.Password)
	}
	s.cmd = exec.Command(s.bin, args...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.exited)
	c := s.Client()
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on port %d exited: %v\n%s", s.port, err, log)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server on port %d did not answer within 10s: %w", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (what a deleted pod looks like to its clients).
func (s *RedisServer) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts it again on the same port, empty (no persistence, like
// the chart's store).
func (s *RedisServer) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// Client is a plain client for inspecting what the store wrote.
func (s *RedisServer) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port), Password: s.Password,
		DisableIdentity: true, MaxRetries: -1})
}
