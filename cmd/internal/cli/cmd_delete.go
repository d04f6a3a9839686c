package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// deletePoll is how often delete looks whether the crawl's consumers have left.
const deletePoll = 500 * time.Millisecond

// workersNotice is how long delete gives the fleet's workers to see that an active crawl
// is deleting before it looks for the crawl's consumers: a worker that was starting the
// crawl has a consumer by then, which delete waits for, instead of creating keys after
// they were removed. Workers read the registry's generation every 500 ms.
const workersNotice = 2 * time.Second

func (a *App) deleteCommand() *cobra.Command {
	var crawl string
	var yes bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "delete --redis URL --crawl NAME [--yes] [--timeout D]",
		Short: "Stop a crawl of the fleet and remove it with every key it has",
		Long: `delete removes a crawl from the fleet's registry with every Redis key of it (streams,
frontier, seen URLs, counters, dead letters), as reset does. A queued or running crawl is
first moved to deleting: the workers stop serving it, each acking what it holds and leaving
its groups, and delete waits (up to --timeout) until none of its consumers is alive before
it removes the keys. Deleting a queued or running crawl asks on a terminal and needs --yes
elsewhere; a crawl that is paused, scheduled or ended is deleted at once. A delete that
timed out leaves the crawl deleting (nobody serves it): run it again.`,
		RunE: a.onFleetCrawl(&crawl, func(ctx context.Context, rdb *streams.Client, reg *fleet.Registry) error {
			return a.deleteCrawl(ctx, rdb, reg, crawl, yes, timeout)
		}),
	}
	a.crawlFlags(cmd, &crawl)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete a queued or running crawl without asking")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the workers to stop serving the crawl")
	return cmd
}

// deleteCrawl is delete: asks or checks --yes for an active crawl, moves the crawl to
// deleting (from the state it was asked about, so that one resumed meanwhile is not
// deleted unasked), waits for its consumers to leave, then removes its keys and its
// entry in the registry.
func (a *App) deleteCrawl(ctx context.Context, rdb *streams.Client, reg *fleet.Registry, name string, yes bool, timeout time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s", timeout)
	}
	c, err := reg.Get(ctx, name)
	if err != nil {
		return fleetError(ctx, reg, "delete", name, nil, err)
	}
	l, err := streams.ReadLayout(ctx, rdb, name)
	if err != nil {
		return err
	}
	if c.State.Active() && !yes {
		if err := a.confirmDelete(ctx, rdb, l, c); err != nil {
			return err
		}
	}
	if _, err := reg.Transition(ctx, name, []fleet.State{c.State, fleet.Deleting}, fleet.Deleting, ""); err != nil {
		if errors.Is(err, fleet.ErrState) {
			now, _ := reg.Get(ctx, name)
			return fmt.Errorf("crawl %s went from %s to %s meanwhile: run delete again", name, c.State, now.State)
		}
		return fleetError(ctx, reg, "delete", name, nil, err)
	}
	if c.State.Active() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(workersNotice):
		}
	}
	if err := a.waitConsumersGone(ctx, rdb, l, timeout); err != nil {
		return err
	}
	n, err := inspect.Reset(ctx, rdb, l)
	if err != nil {
		return fmt.Errorf("%w; crawl %s stays deleting (nobody serves it): run delete again", err, name)
	}
	if err := reg.Remove(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "deleted crawl %s (was %s, version %d): %d keys removed, and its entry in the registry\n", name, c.State, c.Version, n)
	return nil
}

// confirmDelete asks a person at a terminal whether to delete the active crawl c (any
// answer but y is an error: the command exits 1), and refuses elsewhere (a script says
// --yes).
func (a *App) confirmDelete(ctx context.Context, rdb *streams.Client, l streams.Layout, c fleet.Crawl) error {
	in, ok := a.Stdin.(*os.File)
	out, ok2 := a.Stdout.(*os.File)
	if !ok || !ok2 || !isTerminal(in) || !isTerminal(out) {
		return fmt.Errorf("crawl %s is %s: pass --yes to stop it and delete it with its keys", c.Name, c.State)
	}
	n, err := inspect.CountKeys(ctx, rdb, l)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "delete %s crawl %s and its %d keys? [y/N] ", c.State, c.Name, n)
	line, _ := bufio.NewReader(in).ReadString('\n')
	if ans := strings.ToLower(strings.TrimSpace(line)); ans == "y" || ans == "yes" {
		return nil
	}
	return fmt.Errorf("crawl %s not deleted", c.Name)
}

// waitConsumersGone waits until no consumer of the crawl's groups is alive
// (inspect.Alive): the workers have stopped serving it.
func (a *App) waitConsumersGone(ctx context.Context, rdb *streams.Client, l streams.Layout, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	told := false
	for {
		alive, err := inspect.Alive(ctx, rdb, l)
		if err != nil {
			return err
		}
		if len(alive) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			names := make([]string, len(alive))
			for i, c := range alive {
				names[i] = fmt.Sprintf("%s (group %s, active %s ago)", c.Name, c.Group, c.Idle.Round(time.Second))
			}
			return fmt.Errorf("crawl %s still has consumers alive after %s: %s; it stays deleting (workers do not serve it): "+
				"run delete again once they have stopped (a process killed without stopping counts as alive for 15 s)",
				l.Crawl, timeout, strings.Join(names, ", "))
		}
		if !told {
			fmt.Fprintf(a.Stderr, "waiting for %d consumers of crawl %s to stop (up to %s)\n", len(alive), l.Crawl, timeout)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(deletePoll):
		}
	}
}
