package verbstest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
	"github.com/besim/besim/verbs/verbstest"
)

// The suite's reference model is verbs/fakeverbs: running the suite on it
// checks that the suite's expectations are consistent, and fakeverbs'
// TestSuiteCatchesBugs checks that the suite notices planted bugs. The
// simulated RNIC (rnic's TestConformance) and libibverbs (verbs/ibv) run
// the same cases.

func fakeBackend(opened func(name string)) verbstest.Backend {
	return verbstest.Backend{
		Name: "fakeverbs",
		Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
			if opened != nil {
				opened(t.Name())
			}
			n := fakeverbs.New(fakeverbs.Config{})
			a, b = n.NewContext("fake0"), n.NewContext("fake1")
			return a, b, verbstest.Env{Progress: func(d time.Duration) { n.Advance(n.Now() + d.Nanoseconds()) }}
		},
		Lacks: verbstest.FeatureUD,
	}
}

func TestSuiteOnReferenceModel(t *testing.T) { verbstest.Run(t, fakeBackend(nil)) }

// TestLacksSkips requires that a case needing a feature the backend lacks
// never opens the backend, and that every other case does.
func TestLacksSkips(t *testing.T) {
	var mu sync.Mutex
	var opened []string
	be := fakeBackend(func(name string) {
		mu.Lock()
		opened = append(opened, name)
		mu.Unlock()
	})
	be.Lacks = verbstest.FeatureUD | verbstest.FeatureSRQ | verbstest.FeatureThreadDomain
	verbstest.Run(t, be)
	var want []string
	skipped := 0
	for _, c := range verbstest.Cases() {
		if c.Needs&be.Lacks != 0 {
			skipped++
			continue
		}
		want = append(want, t.Name()+"/"+c.Name)
	}
	if skipped == 0 {
		t.Fatal("no case needs UD, SRQ or thread domains: the test checks nothing")
	}
	if !slices.Equal(opened, want) {
		t.Fatalf("backend opened for\n%q\nwant (lacked features skipped)\n%q", opened, want)
	}
}
