package controller

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/besim/besim/berun/wire"
)

// Format names the result file format.
const Format = "berun-result/1"

// ResultFile is the one JSON document a run writes.
type ResultFile struct {
	Format     string         `json:"format"`
	RunID      string         `json:"run_id"`
	Status     string         `json:"status"` // ok, partial (some host or role failed), failed (nothing ran)
	Plan       PlanInfo       `json:"plan"`
	Controller ControllerInfo `json:"controller"`
	Started    time.Time      `json:"started"`            // controller clock
	StartAt    *time.Time     `json:"start_at,omitempty"` // the synchronized start instant, controller clock
	Finished   time.Time      `json:"finished"`
	Hosts      []HostResult   `json:"hosts"`
	Failures   []Failure      `json:"failures,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
}

// PlanInfo identifies what ran.
type PlanInfo struct {
	Name      string  `json:"name"`
	File      string  `json:"file"`
	SHA256    string  `json:"sha256"`
	DurationS float64 `json:"duration_s"`
	GraceS    float64 `json:"grace_s"`
}

// ControllerInfo identifies the controller.
type ControllerInfo struct {
	Hostname  string `json:"hostname"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

// Failure says which host failed, when and why.
type Failure struct {
	Host   string `json:"host"`
	Phase  string `json:"phase"` // connect, prepare, start, run; aborted for hosts stopped because another failed
	Reason string `json:"reason"`
}

// Clock is the controller's estimate of an agent's clock.
type Clock struct {
	OffsetUS float64 `json:"offset_us"` // agent clock minus controller clock
	RTTUS    float64 `json:"rtt_us"`    // of the sample the offset comes from
	Samples  int     `json:"samples"`
}

// HostResult is one host's part.
type HostResult struct {
	Name     string           `json:"name"`
	Control  string           `json:"control"`
	Data     string           `json:"data"`
	Status   string           `json:"status"` // ok, error (a role reported an error), failed (the host failed), aborted (another host failed before the start)
	Failure  *Failure         `json:"failure,omitempty"`
	Agent    *wire.AgentInfo  `json:"agent,omitempty"`
	Clock    *Clock           `json:"clock,omitempty"`
	Roles    []RoleResult     `json:"roles"`
	Counters *json.RawMessage `json:"counters,omitempty"` // a counters.Report
	Notes    []string         `json:"notes,omitempty"`
}

// RoleResult is one role instance's result.
type RoleResult struct {
	ID     string `json:"id"`
	Role   string `json:"role"`
	Status string `json:"status"` // ok, error, missing (its host failed before reporting)
	Error  string `json:"error,omitempty"`
	// StartSkewMS is when the instance started relative to the start
	// instant (controller clock, corrected by the measured offset).
	StartSkewMS float64            `json:"start_skew_ms"`
	ElapsedS    float64            `json:"elapsed_s"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
	Detail      json.RawMessage    `json:"detail,omitempty"`
	Notes       []string           `json:"notes,omitempty"`
}

// Host returns the named host's result.
func (r *ResultFile) Host(name string) *HostResult {
	for i := range r.Hosts {
		if r.Hosts[i].Name == name {
			return &r.Hosts[i]
		}
	}
	return nil
}

// Role returns the result of the role instance id.
func (r *ResultFile) Role(id string) *RoleResult {
	for i := range r.Hosts {
		for j := range r.Hosts[i].Roles {
			if r.Hosts[i].Roles[j].ID == id {
				return &r.Hosts[i].Roles[j]
			}
		}
	}
	return nil
}

// Write writes the result to dir/NAME.RUNID.json (atomically) and returns
// the path.
func (r *ResultFile) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s.%s.json", r.Plan.Name, r.RunID))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
