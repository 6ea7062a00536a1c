package verbs

import "fmt"

// required lists the attribute masks libibverbs requires for each RC/UD
// transition (IBTA vol. 1 §11.2.4.2, ibv_modify_qp(3)).
func required(t QPType, from, to QPState) (req, opt AttrMask, ok bool) {
	switch {
	case from == StateReset && to == StateInit:
		if t == UD {
			return AttrState | AttrPKeyIndex | AttrPort | AttrQKey, 0, true
		}
		return AttrState | AttrPKeyIndex | AttrPort | AttrAccessFlags, 0, true
	case from == StateInit && to == StateRTR:
		if t == UD {
			return AttrState, AttrQKey, true
		}
		return AttrState | AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN |
			AttrMaxDestRdAtomic | AttrMinRNRTimer, AttrAccessFlags | AttrPKeyIndex, true
	case from == StateRTR && to == StateRTS:
		if t == UD {
			return AttrState | AttrSQPSN, AttrQKey, true
		}
		return AttrState | AttrTimeout | AttrRetryCnt | AttrRNRRetry | AttrSQPSN |
			AttrMaxQPRdAtomic, AttrAccessFlags | AttrMinRNRTimer, true
	case from == StateInit && to == StateInit:
		return AttrState, AttrPKeyIndex | AttrPort | AttrAccessFlags | AttrQKey, true
	case from == StateRTS && to == StateRTS:
		return AttrState, AttrAccessFlags | AttrMinRNRTimer | AttrQKey, true
	case to == StateReset || to == StateErr:
		return AttrState, 0, true
	}
	return 0, 0, false
}

// CheckModify validates a QP state transition and its attribute mask the way
// the kernel verbs layer does, so a simulated backend rejects exactly what a
// real device rejects. A mask without AttrState modifies attributes only.
func CheckModify(t QPType, cur QPState, attr *QPAttr, mask AttrMask) error {
	to := cur
	if mask&AttrState != 0 {
		to = attr.State
	}
	req, opt, ok := required(t, cur, to)
	if !ok {
		return fmt.Errorf("verbs: %v QP cannot move from %v to %v", t, cur, to)
	}
	if mask&AttrState == 0 {
		req &^= AttrState
	}
	if miss := req &^ mask; miss != 0 {
		return fmt.Errorf("verbs: %v %v->%v is missing attributes %#x", t, cur, to, uint32(miss))
	}
	if extra := mask &^ (req | opt | AttrState); extra != 0 {
		return fmt.Errorf("verbs: %v %v->%v does not take attributes %#x", t, cur, to, uint32(extra))
	}
	if mask&AttrPathMTU != 0 && !attr.PathMTU.Valid() {
		return fmt.Errorf("verbs: path MTU %d is not one of 256, 512, 1024, 2048, 4096", attr.PathMTU)
	}
	if mask&AttrRetryCnt != 0 && attr.RetryCnt > 7 {
		return fmt.Errorf("verbs: retry_cnt %d above 7", attr.RetryCnt)
	}
	if mask&AttrRNRRetry != 0 && attr.RNRRetry > 7 {
		return fmt.Errorf("verbs: rnr_retry %d above 7", attr.RNRRetry)
	}
	if mask&AttrMinRNRTimer != 0 && attr.MinRNRTimer > 31 {
		return fmt.Errorf("verbs: min_rnr_timer %d above 31", attr.MinRNRTimer)
	}
	if mask&AttrTimeout != 0 && attr.Timeout > 31 {
		return fmt.Errorf("verbs: timeout %d above 31", attr.Timeout)
	}
	return nil
}
