#!/bin/sh
# The benchmark's CGI script: the same 1 KiB as hello.c, made by the shell alone (printf is a
# builtin of dash and bash: no other program runs).
s=flint-bench-0123
s=$s$s$s$s
s=$s$s$s$s
s=$s$s$s$s
printf 'Content-Type: application/octet-stream\r\nContent-Length: 1024\r\n\r\n%s' "$s"
