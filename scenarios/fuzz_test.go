package scenarios

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: no input may panic; every error is positioned in the file;
// every accepted scenario is valid and survives its normalized round trip.
//
//	go test -run xxx -fuzz FuzzParse -fuzztime 30s ./scenarios/
func FuzzParse(f *testing.F) {
	for _, info := range List() {
		data, err := Builtin(info.Name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(baseYAML))
	for _, s := range []string{
		"",
		"name: [\n",
		"---\n---\n",
		"name: t\n\tduration: 1ms\n",
		"a: &a [*a]\n",
		"fabric: {<<: {topology: {kind: star}}}\n",
		"flows: [{src: 1-65535, dst: 0-65535}]\n",
		"flows: [{src: \"0-\", dst: [\"-\", 1]}]\n",
		"duration: 9223372s\nflows: [{start: 9223372s}]\n",
		"fabric: {links: {rate: 1.5bps, delay: 0.5ps}}\n",
		"fabric: {priorities: [{prio: -1, lossless: true, pfc: {xoff: 1KB, xon: 2KB}}]}\n",
		"fabric: {topology: {kind: fat-tree, k: 64}}\n",
		"fabric: {topology: {kind: leaf-spine, leaves: 65536, hosts_per_leaf: 65536, spines: 1}}\n",
		"seed: 18446744073709551616\n",
		"? [a]\n: b\n",
		"!!binary aGVsbG8=\n",
		"name: !!int x\n",
		"outputs: {dir: \"\\u0000\"}\n",
		"description: |\n  multi\n  line\n",
		strings.Repeat("[", 1000),
		"name: r\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nrnic: {cc: dcqcn}\ndcqcn: {g: 0, fast_recovery: -1}\nflows: [{src: 0, dst: 1, transport: ud, message: 9KiB}]\n",
		"name: b\nbenchmark: {kind: perftest, rates: [0bps], mtus: [1], transports: []}\n",
		"name: m\nbenchmark: {kind: msgrate, qps: [65536], depth: 32768, thread_domains: [true]}\nrnic: {qp: {timeout: 99}}\n",
		"name: m\nbenchmark: {kind: msgrate}\nfabric: {}\nhosts: {}\nflows: []\noutputs: {warmup: 1us}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatal("scenario returned with an error")
			}
			var list ErrorList
			var one *Error
			switch {
			case errors.As(err, &list):
				for _, e := range list {
					if e.File != "fuzz.yaml" {
						t.Fatalf("error without file: %q", e)
					}
				}
			case errors.As(err, &one):
				if one.File != "fuzz.yaml" {
					t.Fatalf("error without file: %q", one)
				}
			default:
				t.Fatalf("error %T is not positioned: %v", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted but invalid: %v", err)
		}
		out, err := s.YAML()
		if err != nil {
			t.Fatalf("YAML: %v", err)
		}
		back, err := Parse("normalized.yaml", out)
		if err != nil {
			t.Fatalf("normalized form does not parse: %v\n%s", err, out)
		}
		a, b := *s, *back
		a.src, b.src = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the scenario:\n%s", out)
		}
		_ = s.ExpandFlows()
	})
}
