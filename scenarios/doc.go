// Package scenarios is besim's scenario format: the YAML schema (version 1),
// its strict loader, and the scenarios embedded in the binary.
//
// A Scenario is plain, validated data with typed units (Rate in bits/s,
// Size in bytes, Duration in sim.Time picoseconds, Fraction, Ratio); a
// runner translates it into fabric, RNIC and workload configs. The package
// imports no simulation component, only sim for its time type and the
// ByteExpress core (byteexpress, byteexpress/rpc) for the defaults of the
// core's knobs (workload fragment, rpc and keepalive), declared there.
//
// Units. Rates are SI bits per second (25Gbps, 100Mbps, 1.5Tbps). Sizes are
// bytes: KB, MB, GB, TB are powers of 1000 and KiB, MiB, GiB, TiB powers of
// 1024 (so 4KB = 4000 and 4KiB = 4096); a plain integer is a count of bytes
// and the suffix B is allowed; bare K/M/G are refused as ambiguous.
// Durations take ps, ns, us (or µs), ms, s (10us, 1.5ms). Fractions are 1%
// or 0.01. Decimals are exact (1.5KiB = 1536); a value that is not a whole
// number of bits/s, bytes or picoseconds is an error.
//
// Strictness. Unknown keys, a wrong kind of value, bad units, negative
// values, duplicate keys, YAML merge keys and extra documents are errors.
// Every error reads "FILE:LINE: FIELD: what is wrong (allowed: ...)", with
// FIELD a path such as fabric.links.rate or flows[1].src; Validate's
// semantic errors (kmin > kmax, xon > xoff, a lossless class without PFC, a
// host out of range, a flow to itself, ...) are positioned the same way.
// Defaults are applied in one function, ApplyDefaults; a zero written in
// the file where zero is meaningless is an error, never silently the
// default.
//
// Sections: fabric, hosts (hosts.nic: raw or rnic), rnic (the simulated
// NIC's resource and cost model), dcqcn, flows (transport raw, rc or ud),
// benchmark (perftest or msgrate instead of a fabric), outputs. The rnic,
// dcqcn and workload.tcp knobs, and the fabric defaults the format shares
// with package fabric, are declared once, with their defaults, in their
// models (rnic.DefaultConfig, dcqcn.DefaultConfig and ConnectXConfig,
// tcpsim.DefaultConfig, fabric.DefaultConfig); this package imports no
// model, so ApplyDefaults overlays the file on the values of a registered
// ModelDefaults (package experiment registers one; berun, which drives
// real NICs, links none and leaves them unset).
//
// Every key, its unit, default and allowed values: scenarios/SCHEMA.md. The
// embedded scenarios are scenarios/builtin/*.yaml (see List; Default is the
// one `besim run` uses with no argument).
package scenarios
