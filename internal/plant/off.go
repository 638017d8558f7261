//go:build !plant

package plant

// Enabled reports whether this build can switch planted bugs on: false in
// a normal build, which has no switch.
const Enabled = false

// build catches a linker option meant for a plant build (-X
// ...plant.build=NAME) so that simrun can refuse it with a clear message
// instead of silently running clean. Nothing but Requested reads it: no
// hook depends on it.
var build string

// Active returns the bug switched on: none, ever, in a normal build.
func Active() Bug { return "" }

// Requested returns the bug the linker named (-X ...plant.build=NAME), or
// "" for none. In a normal build such a request switches nothing on; a
// command should refuse it and say to rebuild with -tags plant.
func Requested() Bug { return Bug(build) }

// On reports whether b is the active bug: never, in a normal build. It is
// a constant the compiler inlines, so every hook folds away.
func On(Bug) bool { return false }
