package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Write stores r under dir as result.json, one CSV per table and the time
// series as series.csv (as the scenario's outputs section asks) and
// returns the paths written.
func Write(r *report.Result, dir string, o scenarios.Outputs) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	var files []string
	put := func(name string, b []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		files = append(files, p)
		return nil
	}
	if o.JSON == nil || *o.JSON {
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			return nil, err
		}
		if err := put("result.json", b.Bytes()); err != nil {
			return nil, err
		}
	}
	if o.CSV == nil || *o.CSV {
		for i := range r.Tables {
			var b bytes.Buffer
			if err := r.Tables[i].WriteCSV(&b); err != nil {
				return nil, err
			}
			// Histogram tables are named hist/NAME: keep files flat.
			name := strings.ReplaceAll(r.Tables[i].Name, "/", "_")
			if err := put(name+".csv", b.Bytes()); err != nil {
				return nil, err
			}
		}
		if len(r.Series) > 0 {
			var b bytes.Buffer
			if err := r.WriteSeriesCSV(&b); err != nil {
				return nil, err
			}
			if err := put("series.csv", b.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}
