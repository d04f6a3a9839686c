package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionCommand prints the version line (versionLine) of the binary it runs in.
func (a *App) versionCommand(name string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the VCS revision the binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildVersion(name))
			return err
		},
	}
}

// buildVersion is the version line of the running binary, called name.
func buildVersion(name string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionLine(name, info)
}

// noVCS is what the version line says when the binary carries no VCS revision: the go
// command stamps one only with -buildvcs=true (or auto, the default unless GOFLAGS says
// otherwise) in a git clone, not in go run or go test, nor in a git worktree (whose .git
// is a file the go command does not take for a repository).
const noVCS = "revision unknown: built without VCS stamping (go build -buildvcs=true, in a git clone)"

// versionLine is "NAME VERSION (revision REV, TIME, modified)" from a binary's build
// information: the main module's version ("(devel)" for a build of the checked-out
// module, a pseudo-version when Go derived one from the revision), and the revision,
// commit time and "modified" (uncommitted changes at build time) that the go command
// stamps from the repository. A binary built without stamping (-buildvcs=false, go run,
// go test, a git worktree) says its revision is unknown and why, never a guessed one;
// info nil: a binary without build information.
func versionLine(name string, info *debug.BuildInfo) string {
	if info == nil {
		return name + " (unknown version) (revision unknown: the binary carries no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return fmt.Sprintf("%s %s (%s)", name, version, noVCS)
	}
	parts := []string{"revision " + rev}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "modified")
	}
	return fmt.Sprintf("%s %s (%s)", name, version, strings.Join(parts, ", "))
}
