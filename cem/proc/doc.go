// Package proc holds the helpers that a plugin (and modulo's host side) needs to run servers
// and wait for them: every server in a process group and, where the host has cgroup2, a cgroup
// of its own (Containment), suspended and killed whole with everything it started, a child that
// called setsid included; an IPC namespace of its own, so that its System V shared memory ends
// with it; pid files naming each group, so that a later run can end what a killed one left
// (KillLeftovers); a check that ports are free; the shared memory files a server holds
// (GroupSharedMemory); and WaitFor, the bounded poll every wait uses. It knows nothing of the
// plugin protocol.
package proc
