package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// continuousFlags are --continuous and --idle-window, of the commands that run the
// crawl's stages (crawl, fetch, parse, store). Package spiders, "Revisits", maps every
// piece of revisits.
type continuousFlags struct {
	on      bool
	window  inspect.Continuous
	changed func(name string) bool
}

// AddContinuous adds --continuous and --idle-window to a command that runs stages.
func (f *RunFlags) AddContinuous(cmd *cobra.Command) {
	c := &f.continuous
	fl := cmd.Flags()
	fl.BoolVar(&c.on, "continuous", false, "keep the crawl going with its revisits (settings.revisit): it is not done while a revisit is scheduled (within --idle-window); recorded in Redis for every process of the crawl and status until --continuous=false or a reset")
	fl.DurationVar(&c.window.IdleWindow, "idle-window", 0, "with --continuous: the crawl is done (a run with --until-done stops) once nothing else is left and its next revisit is due further off than this; 0: never while any revisit is scheduled (implies --continuous)")
	c.changed = fl.Changed
}

// mode is the continuous mode the flags ask for; nil leaves the crawl's as it is.
func (c *continuousFlags) mode() *inspect.Continuous {
	if c.changed == nil || !(c.changed("continuous") || c.changed("idle-window")) {
		return nil
	}
	m := c.window
	m.On = c.on || !c.changed("continuous")
	if !m.On {
		m.IdleWindow = 0
	}
	return &m
}

// continuousNote is what status adds to its revisits line about the crawl's mode.
func continuousNote(c inspect.Continuous) string {
	switch {
	case !c.On:
		return "; one pass (done without them)"
	case c.IdleWindow > 0:
		return fmt.Sprintf("; continuous, done when none is due within %v", c.IdleWindow)
	default:
		return "; continuous, never done while any is scheduled"
	}
}
