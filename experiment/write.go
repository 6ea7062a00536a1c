package experiment

import (
	"bytes"
	"strings"

	"github.com/besim/besim/internal/fileio"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Write stores r under dir as result.json, one CSV per table and the time
// series as series.csv (as the scenario's outputs section asks) and
// returns the paths written. dir is replaced as a whole
// (fileio.WriteDir): it ends up with this run's files only, or, if
// writing fails, as it was. A folder holding anything but what besim
// writes (.json, .csv, and the .md, .png and .svg of sweep and plot,
// stale once the run is replaced) is refused, not replaced.
func Write(r *report.Result, dir string, o scenarios.Outputs) ([]string, error) {
	var files []fileio.File
	// The series' numbers formatted once for both files, each file
	// written a part at a time, never whole in memory.
	p := r.Prepare()
	if o.JSON == nil || *o.JSON {
		files = append(files, fileio.File{Name: "result.json", Write: p.WriteJSON})
	}
	if o.CSV == nil || *o.CSV {
		for i := range r.Tables {
			var b bytes.Buffer
			if err := r.Tables[i].WriteCSV(&b); err != nil {
				return nil, err
			}
			// Histogram tables are named hist/NAME: keep files flat.
			name := strings.ReplaceAll(r.Tables[i].Name, "/", "_")
			files = append(files, fileio.File{Name: name + ".csv", Data: b.Bytes()})
		}
		if len(r.Series) > 0 {
			files = append(files, fileio.File{Name: "series.csv", Write: p.WriteSeriesCSV})
		}
	}
	return fileio.WriteDir(dir, files, ".json", ".csv", ".md", ".png", ".svg")
}
