package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams"
)

// The commands that steer one crawl of the fleet's registry (pause, resume, cancel,
// delete) name it with --crawl, as the commands on a crawl's keys do, but look for it
// in the registry: a crawl submitted and never served has no keys yet.

// onFleetCrawl is the RunE of a command on the registered crawl named by *crawl: it
// checks the name, connects (--redis required), runs run and closes the connection.
func (a *App) onFleetCrawl(crawl *string, run func(ctx context.Context, rdb *streams.Client, reg *fleet.Registry) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := checkCrawl(*crawl); err != nil {
			return err
		}
		ctx := cmd.Context()
		rdb, err := a.Connect(ctx, true)
		if err != nil {
			return err
		}
		defer rdb.Close()
		return run(ctx, rdb, fleet.New(rdb))
	}
}

// fleetError words a refusal of the registry for a person: an unknown name points to
// `crawls`, a change the state does not allow says the state and which states allow it.
func fleetError(ctx context.Context, reg *fleet.Registry, verb, name string, allowed []fleet.State, err error) error {
	switch {
	case errors.Is(err, fleet.ErrUnknownCrawl):
		return fmt.Errorf("no crawl named %s; `streamcrawl crawls` lists them", name)
	case errors.Is(err, fleet.ErrState):
		c, gerr := reg.Get(ctx, name)
		if gerr != nil {
			return fleetError(ctx, reg, verb, name, allowed, gerr)
		}
		want := make([]string, len(allowed))
		for i, s := range allowed {
			want[i] = string(s)
		}
		return fmt.Errorf("cannot %s crawl %s: it is %s (%s takes a crawl that is %s)", verb, name, c.State, verb, strings.Join(want, " or "))
	}
	return err
}

// transitionCommand is pause, resume or cancel: crawl from one of the states from to
// state to (to(c) picks it from the crawl as it is), then says what was done.
func (a *App) transitionCommand(verb, short, long string, from []fleet.State, to func(fleet.Crawl) fleet.State, done string) *cobra.Command {
	var crawl string
	cmd := &cobra.Command{
		Use:   verb + " --redis URL --crawl NAME",
		Short: short,
		Long:  long,
		RunE: a.onFleetCrawl(&crawl, func(ctx context.Context, _ *streams.Client, reg *fleet.Registry) error {
			c, err := reg.Get(ctx, crawl)
			if err != nil {
				return fleetError(ctx, reg, verb, crawl, from, err)
			}
			next := to(c)
			prev, err := reg.Transition(ctx, crawl, from, next, "")
			if err != nil {
				return fleetError(ctx, reg, verb, crawl, from, err)
			}
			fmt.Fprintf(a.Stdout, "crawl %s: %s, was %s; %s\n", crawl, next, prev, strings.ReplaceAll(done, "NAME", crawl))
			return nil
		}),
	}
	a.crawlFlags(cmd, &crawl)
	return cmd
}

func (a *App) pauseCommand() *cobra.Command {
	return a.transitionCommand("pause", "Stop serving a crawl of the fleet and keep its state",
		`pause makes the fleet's workers stop serving a queued or running crawl: each finishes
and acks what it holds of it and leaves it. Its state stays in Redis, and resume continues
it where it stopped.`,
		fleet.PauseFrom, func(fleet.Crawl) fleet.State { return fleet.Paused },
		"workers stop serving it within seconds; `streamcrawl resume --crawl NAME` continues it")
}

func (a *App) resumeCommand() *cobra.Command {
	return a.transitionCommand("resume", "Serve a paused crawl of the fleet again",
		`resume makes a paused crawl active again: running when it had started (the workers go on
with what Redis holds of it), queued when no worker had served it yet.`,
		fleet.ResumeFrom, fleet.ResumedState,
		"the fleet's workers serve it again within seconds")
}

func (a *App) cancelCommand() *cobra.Command {
	return a.transitionCommand("cancel", "Stop a crawl of the fleet for good and keep its keys",
		`cancel ends a crawl that is queued, running, paused or scheduled: the workers stop serving
it (each finishes and acks what it holds) and a schedule starts no more runs. Its keys stay
in Redis for status, dead and replay; submit queues it again, delete removes it.`,
		[]fleet.State{fleet.Queued, fleet.Running, fleet.Paused, fleet.Scheduled}, func(fleet.Crawl) fleet.State { return fleet.Cancelled },
		"its keys stay (`streamcrawl delete --crawl NAME` removes them, `streamcrawl submit` queues it again)")
}
