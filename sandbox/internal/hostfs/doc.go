// Package hostfs is the host's side of a Linux sandbox's files, shared by the backends that keep a
// sandbox's home and /tmp as host directories: every path is opened with openat2 beneath one of them,
// refusing every symlink and mount crossing, since sandboxed code may plant a symlink to /etc/shadow and
// wait for the host to follow it.
package hostfs
