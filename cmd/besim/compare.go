package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/besim/besim/report"
)

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", stdout, stderr)
	md := fs.Bool("md", false, "print Markdown")
	names := fs.String("names", "", "column names for A and B: `a,b` (default: the file names)")
	table := fs.String("table", "", "also compare the cells of this table (e.g. sweep, flows), as TABLE/ROW/COLUMN")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	a, err := readResult(pos[0])
	if err != nil {
		return err
	}
	b, err := readResult(pos[1])
	if err != nil {
		return err
	}
	an, bn := strings.TrimSuffix(filepath.Base(pos[0]), ".json"), strings.TrimSuffix(filepath.Base(pos[1]), ".json")
	if an == bn {
		an, bn = pos[0], pos[1]
	}
	if *names != "" {
		n := strings.Split(*names, ",")
		if len(n) != 2 {
			return fmt.Errorf("--names %s: want two names, a,b", *names)
		}
		an, bn = n[0], n[1]
	}
	if *table != "" {
		for _, r := range []*report.Result{a, b} {
			if err := flattenTable(r, *table); err != nil {
				return err
			}
		}
	}
	t := report.Compare(a, b, an, bn)
	if len(t.Rows) == 0 {
		return fmt.Errorf("%s and %s have no metric in common", pos[0], pos[1])
	}
	if *md {
		return t.WriteMarkdown(stdout)
	}
	return t.WriteText(stdout)
}

// flattenTable appends a table's cells to r's metrics as TABLE/ROW/COLUMN,
// so that Compare sets them side by side.
func flattenTable(r *report.Result, name string) error {
	t, ok := r.Table(name)
	if !ok {
		var have []string
		for _, t := range r.Tables {
			have = append(have, t.Name)
		}
		return fmt.Errorf("no table %q in %s result (tables: %s)", name, r.Scenario, strings.Join(have, ", "))
	}
	for _, row := range t.Rows {
		for i, c := range t.Columns {
			r.Add(name+"/"+row.Key+"/"+c.Name, row.Values[i], c.Unit)
		}
	}
	return nil
}
