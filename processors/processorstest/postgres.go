package processorstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// Postgres is a PostgreSQL server owned by a test: a fresh cluster in a temporary
// directory, trust authentication, listening on 127.0.0.1 and on a unix socket in Dir.
// It runs with fsync=off: a Kill loses no committed transaction (commits still reach the
// OS), a machine crash would.
type Postgres struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// Dir holds the data directory (Dir/data), the unix socket and postgres.log.
	Dir string

	t    testing.TB
	bin  string              // directory of initdb and postgres
	cred *syscall.Credential // the postgres user's, when the test runs as root
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// StartPostgres initialises a new cluster and starts a server for t, stopped (immediate
// shutdown) and removed when t ends. The binaries are taken from the highest version in
// /usr/lib/postgresql/*/bin, else from PATH; when they are missing the test fails,
// telling to install the postgresql package. PostgreSQL refuses to run as root, so under
// root the server runs as the postgres system user (created with useradd if missing).
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Fatalf("processorstest: %v; install the PostgreSQL server (Debian: apt-get install -y postgresql)", err)
	}
	p := &Postgres{t: t, bin: bin}
	if os.Geteuid() == 0 {
		if p.cred, err = postgresUser(); err != nil {
			t.Fatalf("processorstest: %v", err)
		}
	}
	// Not t.TempDir: its parent is private to root, and the socket path must stay short.
	if p.Dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		t.Fatalf("processorstest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(p.Dir) })
	if p.cred != nil {
		if err := os.Chown(p.Dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatalf("processorstest: %v", err)
		}
	}
	initdb := p.command(filepath.Join(bin, "initdb"), "-D", p.dataDir(), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("processorstest: initdb: %v\n%s", err, out)
	}
	var lastErr error
	for try := 0; try < 5; try++ {
		p.Addr = streamstest.FreeAddr(t)
		if lastErr = p.start(); lastErr == nil {
			t.Cleanup(p.Stop)
			return p
		}
	}
	t.Fatalf("processorstest: start postgres: %v", lastErr)
	return nil
}

// URL returns postgres://postgres@127.0.0.1:port/postgres?sslmode=disable.
func (p *Postgres) URL() string {
	return "postgres://postgres@" + p.Addr + "/postgres?sslmode=disable"
}

func (p *Postgres) dataDir() string { return filepath.Join(p.Dir, "data") }

// command returns cmd to run as the server's user.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (p *Postgres) start() error {
	_, port, _ := net.SplitHostPort(p.Addr)
	logPath := filepath.Join(p.Dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.command(filepath.Join(p.bin, "postgres"), "-D", p.dataDir(), "-p", port,
		"-h", "127.0.0.1", "-k", p.Dir, "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "shared_buffers=32MB", "-c", "max_connections=100")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgconn.Connect(ctx, p.URL()+"&connect_timeout=1")
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			p.cmd, p.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("postgres on %s exited: %s", p.Addr, p.Log(10))
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return fmt.Errorf("postgres on %s did not accept connections in 30s: %s", p.Addr, p.Log(10))
}

// Log returns the last n lines of the server's log.
func (p *Postgres) Log(n int) string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "postgres.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop shuts the server down at once (SIGQUIT, what pg_ctl stop -m immediate sends),
// killing it after 10s. It does nothing when the server is not running.
func (p *Postgres) Stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

// Kill kills the server and all its backends with SIGKILL, like a crash: open
// connections break and the next start runs crash recovery.
func (p *Postgres) Kill() {
	if p.cmd == nil {
		return
	}
	// Each backend is the leader of its own process group, so killing the postmaster's
	// group is not enough, and a backend outliving the postmaster keeps serving its
	// connection for a moment. Freeze the postmaster so that it forks no more, then kill
	// its children and it.
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, child := range childrenOf(pid) {
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// childrenOf returns the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

// Restart kills the server and starts it again on the same port and data directory.
func (p *Postgres) Restart() {
	p.t.Helper()
	p.Kill()
	var err error
	for try := 0; try < 50; try++ { // the port and shared memory may linger briefly
		if err = p.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("processorstest: restart postgres: %v", err)
}

// findBinaries returns the directory of initdb and postgres.
func findBinaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestVer := "", -1.0
	for _, d := range dirs {
		ver, err := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		if err != nil || ver <= bestVer || !isFile(filepath.Join(d, "initdb")) || !isFile(filepath.Join(d, "postgres")) {
			continue
		}
		best, bestVer = d, ver
	}
	if best != "" {
		return best, nil
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin nor on PATH")
	}
	initdb, _ = filepath.EvalSymlinks(initdb)
	if !isFile(filepath.Join(filepath.Dir(initdb), "postgres")) {
		return "", fmt.Errorf("no postgres binary beside %s", initdb)
	}
	return filepath.Dir(initdb), nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// postgresUser returns the credential of the postgres system user, creating the user
// when it does not exist.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		out, uerr := exec.Command("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", "postgres").CombinedOutput()
		if uerr != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run the server as: useradd: %v: %s", uerr, out)
		}
		if u, err = user.Lookup("postgres"); err != nil {
			return nil, err
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
