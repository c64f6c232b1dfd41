package tunnel

// sysSetns is setns(2)'s system call number, which package syscall lacks.
const sysSetns = 268
