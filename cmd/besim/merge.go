package main

import (
	"fmt"
	"io"
	"os"

	"github.com/besim/besim/report"
	"github.com/besim/besim/sweep"
)

// readResult reads a result JSON file.
func readResult(file string) (*report.Result, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

func cmdMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", stdout, stderr)
	out := fs.String("o", "", "merged `FILE.json` (CSV and Markdown beside it); default: JSON on stdout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	var parts []*report.Result
	for _, p := range pos {
		r, err := readResult(p)
		if err != nil {
			return err
		}
		parts = append(parts, r)
	}
	merged, err := sweep.Merge(parts)
	if err != nil {
		return err
	}
	if *out == "" {
		return merged.WriteJSON(stdout)
	}
	files, err := writeSweep(merged, *out)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(stderr, "wrote", f)
	}
	return nil
}
