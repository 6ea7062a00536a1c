package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/besim/besim/internal/fileio"
	"github.com/besim/besim/report"
	"github.com/besim/besim/sweep"
)

// readResult reads a result JSON file (a regular file of at most
// report.MaxFile bytes).
func readResult(file string) (*report.Result, error) {
	b, err := fileio.ReadFile(file, report.MaxFile, "result file")
	if err != nil {
		return nil, err
	}
	r, err := report.ReadJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

func cmdMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "SHARD.json... -o OUT.json", stderr)
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
	// Shards with failed or unfinished points merge into a file whose
	// rows say so; merge writes it and exits non-zero.
	var inc *sweep.Incomplete
	if err != nil && !errors.As(err, &inc) {
		return err
	}
	if *out == "" {
		if err := merged.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		files, err := writeSweep(merged, *out)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(stderr, "wrote", f)
		}
	}
	if inc != nil {
		return inc
	}
	return nil
}
