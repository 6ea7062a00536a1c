package verbs

// ModifyAll moves qp through attrs[i] with masks[i] in order (RESET to
// INIT to RTR to RTS, say) and stops at the first error.
func ModifyAll(qp QP, attrs []QPAttr, masks []AttrMask) error {
	for i := range attrs {
		if err := qp.Modify(&attrs[i], masks[i]); err != nil {
			return err
		}
	}
	return nil
}
