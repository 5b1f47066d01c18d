// Package hostroot reads what the sandbox backends copy of the host's root directory.
package hostroot

import "os"

// MergedUsr returns the host's top-level library and binary directories: those that are symlinks into
// /usr (a merged-usr host), name to link target, and those that are real directories, as absolute paths.
// A sandbox copies the links and binds the directories.
func MergedUsr() (links map[string]string, dirs []string) {
	links = map[string]string{}
	for _, name := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		fi, err := os.Lstat("/" + name)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink("/" + name); err == nil {
				links[name] = t
			}
		case fi.IsDir():
			dirs = append(dirs, "/"+name)
		}
	}
	return links, dirs
}
