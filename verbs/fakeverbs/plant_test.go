package fakeverbs

import "os"

// The child processes of TestSuiteCatchesBugs plant their bug here.
func init() { plant = os.Getenv("FAKEVERBS_PLANT") }
