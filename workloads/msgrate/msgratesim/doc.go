// Package msgratesim drives the message-rate workload (package msgrate,
// the paper's Figure 11, §6.2.1) on two simulated NICs joined by one wire
// (Test, on the Go API; scenario kind msgrate and the embedded scenario
// fig11, through the experiment registry): each I/O thread is a simulated
// CPU that polls its CQ and posts what its msgrate.Poster chooses, and the
// NIC model's doorbell registers (dedicated lock-free ones for the first
// QPs, then shared locked ones, or one per thread domain) and lock model
// make the rate fall past the dedicated registers without thread domains.
package msgratesim
