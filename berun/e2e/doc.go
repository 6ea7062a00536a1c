// Package e2e holds berun's end-to-end tests: they build cmd/berun, start
// agents as separate processes (on loopback, and, when running as root with
// `ip netns` available, inside two network namespaces joined by a shaped
// veth pair), drive runs with the controller and check the result file. The
// package has no code of its own.
package e2e
