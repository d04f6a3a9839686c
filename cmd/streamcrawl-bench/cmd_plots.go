package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// The plots' file names in the output directory.
const (
	peersSVG      = "peers.svg"
	millionSVG    = "million.svg"
	politenessSVG = "politeness.svg"
)

// plotsOptions are the plots command's settings.
type plotsOptions struct {
	Data string // the directory of recorded runs
	Out  string // where the SVG files go
}

func (a *app) plotsCommand() *cobra.Command {
	o := plotsOptions{}
	cmd := &cobra.Command{
		Use:   "plots [--data DIR] [--out DIR]",
		Short: "Draw the docs' SVG plots (peers, million, politeness) from the runs recorded with --record",
		Long: `plots reads the runs that bench-peers, bench-memory and bench-broad recorded with
--record in --data (*.json) and draws three SVG files into --out:
  ` + peersSVG + `       pages/s and CPU-s per 1000 pages of each crawler (the newest bench-peers run)
  ` + millionSVG + `     the crawl process's RSS and Redis used_memory against pages crawled (the newest bench-memory run)
  ` + politenessSVG + `  span ÷ limit and median gap ÷ delay against hosts, log scale (every bench-broad run, by host count)
A plot whose runs are missing is left out (and said so); none at all is an error. The same
data draws the same files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return drawPlots(a.Stdout, o)
		},
	}
	cmd.Flags().StringVar(&o.Data, "data", filepath.Join("docs", "performance", "data"), "the directory of recorded runs")
	cmd.Flags().StringVar(&o.Out, "out", filepath.Join("docs", "performance"), "where the SVG files go")
	return cmd
}

// drawPlots draws the plots of the runs recorded in o.Data into o.Out, saying on w what
// it drew from what.
func drawPlots(w io.Writer, o plotsOptions) error {
	recs, err := readRecords(o.Data)
	if err != nil {
		return err
	}
	var peers, memory *recordFile
	var broad []*broadRecord
	for i := range recs {
		switch r := &recs[i]; r.Kind {
		case recordPeers:
			peers = r // the newest wins: recs are oldest first
		case recordMemory:
			memory = r
		case recordBroad:
			broad = append(broad, r.Broad)
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	drawn := 0
	out := func(name string) string { return filepath.Join(o.Out, name) }
	if peers != nil {
		if err := drawPeers(out(peersSVG), &peers.record); err != nil {
			return err
		}
		fmt.Fprintf(w, "plots: %s from %s\n", out(peersSVG), peers.Path)
		drawn++
	} else {
		fmt.Fprintf(w, "plots: no bench-peers run in %s: %s not drawn\n", o.Data, peersSVG)
	}
	if memory != nil {
		if err := drawMemory(out(millionSVG), &memory.record); err != nil {
			return err
		}
		fmt.Fprintf(w, "plots: %s from %s\n", out(millionSVG), memory.Path)
		drawn++
	} else {
		fmt.Fprintf(w, "plots: no bench-memory run in %s: %s not drawn\n", o.Data, millionSVG)
	}
	if len(broad) > 0 {
		if err := drawPoliteness(out(politenessSVG), broad); err != nil {
			return err
		}
		fmt.Fprintf(w, "plots: %s from %d bench-broad runs\n", out(politenessSVG), len(broad))
		drawn++
	} else {
		fmt.Fprintf(w, "plots: no bench-broad run in %s: %s not drawn\n", o.Data, politenessSVG)
	}
	if drawn == 0 {
		return errors.New("plots: no recorded runs in " + o.Data)
	}
	return nil
}
