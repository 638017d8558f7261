//go:build plant

package plant

// Enabled reports whether this build can switch planted bugs on: true
// only in a build with the tag plant.
const Enabled = true

// build is set by the linker for a deliberately broken build.
var build string

var active = Bug(build)

// Active returns the bug switched on, or "" for none.
func Active() Bug { return active }

// Requested returns the bug the linker named (-X ...plant.build=NAME), or
// "" for none. In a plant build it is the bug active at start.
func Requested() Bug { return Bug(build) }

// On reports whether b is the active bug.
func On(b Bug) bool { return active == b }

// Set switches b on ("" for none) and returns the function that restores
// the previous state. It rejects a name not in the catalogue.
func Set(b Bug) (restore func(), err error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	prev := active
	active = b
	return func() { active = prev }, nil
}
