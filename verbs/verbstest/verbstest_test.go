package verbstest

import (
	"testing"
	"time"

	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

func TestCasesHaveUniqueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Cases() {
		if c.Name == "" || c.Run == nil || seen[c.Name] {
			t.Fatalf("case %q: empty, without Run or duplicated", c.Name)
		}
		seen[c.Name] = true
	}
}

func TestEnvDefaults(t *testing.T) {
	e := Env{Progress: func(time.Duration) {}, GIDIndex: 3}.withDefaults()
	if e.Port != 1 || e.Timeout <= 0 || e.Step <= 0 || e.AH == nil {
		t.Fatalf("defaults %+v", e)
	}
	c := fakeverbs.New(fakeverbs.Config{}).NewContext("c")
	if ah := e.AH(c, c); ah.DGID != c.Attr().GID || ah.SGIDIndex != 3 || ah.PortNum != 1 || ah.HopLimit == 0 {
		t.Fatalf("default AH %+v", ah)
	}
}

func TestChainHelpers(t *testing.T) {
	wrs := make([]verbs.SendWR, 3)
	h := ChainSend(wrs)
	if h != &wrs[0] || wrs[0].Next != &wrs[1] || wrs[1].Next != &wrs[2] || wrs[2].Next != nil {
		t.Fatal("ChainSend links wrong")
	}
	if ChainSend(nil) != nil || ChainRecv(nil) != nil {
		t.Fatal("empty chains must be nil")
	}
	b := make([]byte, 64)
	Fill(b, 3)
	if string(b) != string(pattern(64, 3)) || string(b) == string(pattern(64, 4)) {
		t.Fatal("Fill is not a function of its seed")
	}
	m, err := mapMem(5000)
	if err != nil || len(m) != 5000 {
		t.Fatalf("mapMem: %v, %d bytes", err, len(m))
	}
	m[4999] = 1
	unmapMem(m)
}
