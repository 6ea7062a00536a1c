package experiment

import (
	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

func dur(p *scenarios.Duration, def sim.Time) sim.Time {
	if p == nil {
		return def
	}
	return p.Time()
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// NICConfig translates the scenario's rnic and dcqcn sections into the
// model of every simulated NIC. lineRate is the port rate DCQCN starts at
// and is capped by (the host link rate; a benchmark passes each point's).
// Unset fields keep rnic.DefaultConfig's values.
func NICConfig(s *scenarios.Scenario, lineRate int64) (rnic.Config, error) {
	c := rnic.DefaultConfig()
	r := s.RNIC
	if r == nil {
		return c, nil
	}
	c.CC = rnic.CCNone
	if r.CC == scenarios.CCDCQCN {
		c.CC = rnic.CCDCQCN
	}
	c.SizesOnly = r.Payload != scenarios.PayloadBytes
	c.WQECost = dur(r.WQECost, c.WQECost)
	c.PacketCost = dur(r.PacketCost, c.PacketCost)
	if r.Units > 0 {
		c.Units = r.Units
	}
	c.CQECost = dur(r.CQECost, c.CQECost)
	if r.QPCacheEntries > 0 {
		c.QPCacheEntries = r.QPCacheEntries
	}
	if r.RxBuffer > 0 {
		c.RxBuffer = int64(r.RxBuffer)
	}
	if m := r.MRCache; m != nil {
		c.MPTCacheEntries, c.MTTCacheEntries = m.MPTEntries, m.MTTEntries
		if m.Ways > 0 {
			c.MRCacheWays = m.Ways
		}
		if m.Page > 0 {
			c.MTTPage = int64(m.Page)
		}
	}
	if r.AckReqEvery > 0 {
		c.AckReqEvery = r.AckReqEvery
	}
	c.CNPPrio = uint8(intOr(r.CNPPrio, int(c.CNPPrio)))
	if r.PCIe.Bandwidth > 0 {
		c.DMABandwidth = int64(r.PCIe.Bandwidth)
	}
	c.DMAReadLatency = dur(r.PCIe.ReadLatency, c.DMAReadLatency)
	c.DMAWriteLatency = dur(r.PCIe.WriteLatency, c.DMAWriteLatency)
	c.MMIOLatency = dur(r.PCIe.MMIOLatency, c.MMIOLatency)
	c.DedicatedBFRegs = intOr(r.Doorbells.LockFree, c.DedicatedBFRegs)
	if r.Doorbells.Shared > 0 {
		c.SharedBFRegs = r.Doorbells.Shared
	}
	u := r.CPU
	c.PostSendCall = dur(u.PostSend, c.PostSendCall)
	c.PostSendPerWQE = dur(u.PostSendPerWQE, c.PostSendPerWQE)
	c.DoorbellCost = dur(u.Doorbell, c.DoorbellCost)
	c.PostRecvCall = dur(u.PostRecv, c.PostRecvCall)
	c.PostRecvPerWQE = dur(u.PostRecvPerWQE, c.PostRecvPerWQE)
	c.PollCall = dur(u.Poll, c.PollCall)
	c.PollPerCQE = dur(u.PollPerCQE, c.PollPerCQE)
	c.LockAcquire = dur(u.LockAcquire, c.LockAcquire)
	c.LockTransfer = dur(u.LockTransfer, c.LockTransfer)
	c.RegMRBase = dur(u.RegMR, c.RegMRBase)
	c.RegMRPerPage = dur(u.RegMRPerPage, c.RegMRPerPage)

	if c.CC == rnic.CCDCQCN {
		c.DCQCN = DCQCNConfig(s, lineRate)
		if d := s.DCQCN; d != nil {
			c.CNPInterval = dur(d.CNPInterval, c.CNPInterval)
		}
		if err := c.DCQCN.Validate(); err != nil {
			return c, s.Errorf("dcqcn", "%v", err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, s.Errorf("rnic", "%v", err)
	}
	return c, nil
}

// DCQCNConfig is the reaction-point configuration for a port of lineRate
// bits/s: the profile's (dcqcn.DefaultConfig, or dcqcn.ConnectXConfig for
// dcqcn.profile: connectx) with the scenario's dcqcn keys applied.
func DCQCNConfig(s *scenarios.Scenario, lineRate int64) dcqcn.Config {
	c := dcqcn.DefaultConfig(lineRate)
	d := s.DCQCN
	if d == nil {
		return c
	}
	if d.Profile == scenarios.ProfileConnectX {
		c = dcqcn.ConnectXConfig(lineRate)
	}
	switch d.AlphaUpdate {
	case scenarios.AlphaOnCNP:
		c.AlphaSampled = false
	case scenarios.AlphaPerPeriod:
		c.AlphaSampled = true
	}
	switch d.TargetClamp {
	case scenarios.ClampAlways:
		c.TargetClamp = dcqcn.ClampAlways
	case scenarios.ClampAfterTimer:
		c.TargetClamp = dcqcn.ClampAfterTimer
	case scenarios.ClampNever:
		c.TargetClamp = dcqcn.ClampNever
	}
	if d.G.Den > 0 {
		c.G = d.G.Float64()
	}
	if d.InitialAlpha.Den > 0 {
		c.InitialAlpha = d.InitialAlpha.Float64()
	}
	if d.AlphaTimer > 0 {
		c.AlphaTimer = int64(d.AlphaTimer)
	}
	if d.RateTimer > 0 {
		c.RateTimer = int64(d.RateTimer)
	}
	if d.ByteCounter > 0 {
		c.ByteCounter = int64(d.ByteCounter)
	}
	c.FastRecoveryStages = intOr(d.FastRecovery, c.FastRecoveryStages)
	if d.AIRate > 0 {
		c.AdditiveIncrease = int64(d.AIRate)
	}
	if d.DecreasePeriod != nil {
		c.DecreasePeriod = int64(*d.DecreasePeriod)
	}
	if d.HAIRate > 0 {
		c.HyperIncrease = int64(d.HAIRate)
	}
	if d.MinRate > 0 {
		c.MinRate = min(int64(d.MinRate), lineRate)
	}
	return c
}
