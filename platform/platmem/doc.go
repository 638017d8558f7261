// Package platmem is a platform.Store in memory, for tests and for
// embedding courier without a database: it forgets everything when the
// process ends. It passes platformtest.
package platmem
