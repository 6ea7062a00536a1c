package scenarios

import (
	"reflect"
)

// Model knobs. The keys of the rnic, dcqcn and workload.tcp sections, and
// some of the fabric's, are knobs of a simulator model (rnic.Config,
// dcqcn.Config, tcpsim.Config, fabric.Config), whose package declares each
// default with its source. This package imports no model (the workload
// state machines import it, and berun links them without the simulator),
// so it does not know those values: a runner that links the models
// registers a ModelDefaults function (package experiment does, at init),
// and ApplyDefaults overlays the file's keys on the values it returns. The
// defaults the scenario layer chooses itself (the output root, the sample
// interval, the flow count, perftest's QP attributes, ...) stay in
// defaults.go.
//
// Without a registered function (berun, which drives real NICs over real
// links, and this package's own tests) the model knobs a file leaves out
// stay unset and are left out of the normalised scenario: there is no
// model to resolve them against, and nothing there uses them. Validate
// then checks only the values a file wrote.

// ModelDefaults are the model's values of the knobs of one scenario: each
// section holds, in the scenario's types, what the model's DefaultConfig
// (or the chosen profile) gives, for the scenario as resolved so far (its
// host link rate, its dcqcn.profile). A key whose model value is zero is
// left unset (zero or nil); it stays unset in the scenario, and prints
// absent. A nil section has no model values.
type ModelDefaults struct {
	RNIC  *RNIC
	DCQCN *DCQCN
	TCP   *TCP // workload.tcp

	// The fabric model's (fabric.DefaultConfig) values of the keys whose
	// default the scenario format shares with it: link rate and delay,
	// buffer, MTU, PFC alpha (of every lossless class) and quanta, ECN pmax
	// (of every marking class), the storm watchdog's detection time.
	Links       *Links
	Switch      *Switch
	Hosts       *Hosts
	PriorityPFC *PriorityPFC
	ECN         *ECN
	PFC         *PFC
	Watchdog    *Watchdog

	// benchmark.delay: the cable between two NICs back to back
	// (perftest; rnic.DefaultWireDelay) and the link of the testbeds of
	// two simulated hosts under one switch (fragsize, hol, pingpong, peak,
	// msgrate through the core; simhost.DefaultTestbedLinkDelay).
	WireDelay, TestbedDelay Duration
}

// modelDefaults is the registered function; nil without the models.
var modelDefaults func(*Scenario) ModelDefaults

// SetModelDefaults registers f as the source of the model knobs' defaults
// (see ModelDefaults); nil removes it. It is meant to be called once, from
// the init of the package that links the models (experiment), before any
// scenario is parsed.
func SetModelDefaults(f func(*Scenario) ModelDefaults) { modelDefaults = f }

// HasModelDefaults reports whether the model knobs are resolved: whether a
// ModelDefaults function is registered in this binary.
func HasModelDefaults() bool { return modelDefaults != nil }

// models returns the registered function's values for s as resolved so
// far (the sections present, the host link rate), or the zero
// ModelDefaults without one.
func (d *defaulter) models() ModelDefaults {
	if modelDefaults == nil {
		return ModelDefaults{}
	}
	return modelDefaults(d.s)
}

// knob fills one model knob, *field, with the model's value when it is
// unset (zero) and the model's value is not; a zero written in the file is
// reported as def does.
func knob[T comparable](d *defaulter, path string, field *T, model T) {
	var zero T
	if model != zero {
		def(d, path, field, model)
	}
}

// overlay fills the unset knobs of section dst (a pointer to a struct of
// this package, at path) with model's values (a pointer to the same type,
// or nil). A key written in the file is kept. A zero written in a plain
// (non-pointer) field whose model value is not zero is reported, naming
// that value, and then defaulted all the same, as def does; where the
// model's value is zero too, or there is no model, the zero is kept and
// Validate judges it.
func (d *defaulter) overlay(path string, dst, model any) {
	dv := reflect.ValueOf(dst).Elem()
	var mv reflect.Value
	if m := reflect.ValueOf(model); m.IsValid() && !m.IsNil() {
		mv = m.Elem()
	}
	d.overlayValue(path, dv, mv)
}

func (d *defaulter) overlayValue(path string, dv, mv reflect.Value) {
	for _, f := range structKeys(dv.Type()) {
		p := path + "." + f.key
		fv := dv.FieldByName(f.name)
		var mf reflect.Value
		if mv.IsValid() {
			mf = mv.FieldByName(f.name)
		}
		t := f.typ
		switch {
		case t.Kind() == reflect.Pointer:
			// Zero is a value: only a nil field is unset. A pointer to a
			// section (rnic.mr_cache) has no defaults of its own.
			if fv.IsNil() && mf.IsValid() && !mf.IsNil() && t.Elem().Kind() != reflect.Struct {
				c := reflect.New(t.Elem())
				c.Elem().Set(mf.Elem())
				fv.Set(c)
			}
		case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType):
			d.overlayValue(p, fv, mf)
		case t.Kind() == reflect.Slice || t.Kind() == reflect.Map:
			// No knob is a list.
		default:
			if !fv.IsZero() {
				continue
			}
			if !mf.IsValid() || mf.IsZero() {
				// The model's value is zero too (an explicit zero is that
				// value), or unknown: Validate judges an explicit zero.
				continue
			}
			if d.s.present(p) {
				d.errs.add(d.s.Errorf(p, "%s is not allowed (omit the key for the default, %s)", show(fv.Interface()), show(mf.Interface())))
			}
			fv.Set(mf)
		}
	}
}
