package report

import (
	"runtime/debug"
	"sync"
)

var buildOnce = sync.OnceValues(func() (version, revision string) {
	version, revision = Unknown, Unknown
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && revision != Unknown {
		revision += "+dirty"
	}
	return
})

// Build returns the running binary's module version and VCS revision from
// runtime/debug.ReadBuildInfo ("+dirty" appended when the tree had local
// changes), each Unknown when the build does not carry it: `go run` and
// `go test` stamp no VCS information and a build inside the module has no
// module version, so `go build` or `go install` of a tagged module give
// both.
func Build() (version, revision string) { return buildOnce() }

// SetBuild stamps r with the running binary's Build.
func (r *Result) SetBuild() { r.ToolVersion, r.Revision = Build() }
