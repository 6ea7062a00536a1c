package experiment

import (
	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
)

// NICConfig translates the scenario's rnic and dcqcn sections into the
// model of every simulated NIC. lineRate is the port rate DCQCN starts at
// and is capped by (the host link rate; a benchmark passes each point's).
// Unset fields keep rnic.DefaultConfig's values (and the dcqcn profile's);
// rnicKnobs and dcqcnKnobs bind each key to its field.
func NICConfig(s *scenarios.Scenario, lineRate units.Rate) (rnic.Config, error) {
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
	for _, k := range rnicKnobs {
		k.set(r, &c)
	}
	if m := r.MRCache; m != nil {
		c.MPTCacheEntries, c.MTTCacheEntries = m.MPTEntries, m.MTTEntries
		if m.Ways > 0 {
			c.MRCacheWays = m.Ways
		}
		if m.Page > 0 {
			c.MTTPage = units.Size(m.Page)
		}
	}

	if c.CC == rnic.CCDCQCN {
		m := dcqcnFor(s, lineRate)
		c.DCQCN, c.CNPInterval = m.Config, m.CNPInterval
		if err := c.DCQCN.Validate(); err != nil {
			return c, s.Errorf("dcqcn", "%v", err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, s.Errorf("rnic", "%v", err)
	}
	return c, nil
}

// DCQCNConfig is the reaction-point configuration for a port of lineRate:
// the profile's (dcqcn.DefaultConfig, or dcqcn.ConnectXConfig for
// dcqcn.profile: connectx) with the scenario's dcqcn keys applied.
func DCQCNConfig(s *scenarios.Scenario, lineRate units.Rate) dcqcn.Config {
	return dcqcnFor(s, lineRate).Config
}
