package plot

// The scenarios these tests run need every workload kind registered.
import _ "github.com/besim/besim/workloads/all"
