#!/usr/bin/env python3
"""Where a proxied request's user-space instructions go, from one callgrind dump.

    instr-breakdown.py CALLGRIND_OUT REQUESTS [--top N]
    instr-breakdown.py --by-object CALLGRIND_OUT REQUESTS
    instr-breakdown.py --hot-code CALLGRIND_OUT REQUESTS

CALLGRIND_OUT is a dump written by `callgrind_control -d` (the shared ruler,
`../shared/bench/instr.sh`, leaves it in its temporary directory as `cg.out.<pid>.1`);
REQUESTS is how many requests the dump counted (instr.sh's N, 2000 by default).
Prints each group's exclusive instructions per request (what ran in the function itself,
not in what it called), the reference-count calls per request (each retain and release of a
non-nil, mortal object is an atomic read-modify-write: under load they cost several times their
instructions, so they are counted apart) and, with --top, the N most expensive functions.

With --hot-code (a dump written with `--dump-instr=yes`), the code a request runs through instead
of what it costs: for each object file (and each group of the executable) the 64-byte cache lines
and 4 KiB pages holding an instruction that ran at least once every two requests. That is the
instruction cache and TLB a request needs: more of it than the first-level caches hold is paid in
cycles the instruction count does not show, and more again when the proxy shares a CPU with its
app and upstream. grpc-instr.sh prints it with HOT_CODE=1; for h2peers.sh, set
VALGRIND_OPTS=--dump-instr=yes and pass its `cg.out.<pid>.1`.

With --by-object, only the instructions per request of each object file (the executable and
each shared library; files under 0.5 per request are left out, the total still counts them): the
view that also reads another proxy's dump (nginx, HAProxy, nghttpx), e.g. how much of a stream's
cost is nghttp2's in token-sidecar and in nghttpx, which both use it. --top goes with the default
view only.

Groups, by the function's mangled module or its object file:
  proxy logic      Proxy, TokenManager, Config, Admin, Sidecar modules
  HTTP1            the HTTP1 and HTTPMessage modules
  HTTP2            the HTTP2 module (the codec around nghttp2, the request translator)
  nghttp2          libnghttp2 (HTTP/2 framing, HPACK, flow control)
  OpenSSL          libssl and libcrypto
  libevent         libevent's objects
  Swift ARC        retain/release, bridge-object retain/release, uniqueness checks
  EventLoop        the EventLoop module (channel, timers, flushes), start-up page release apart
  libc             libc, libm, the dynamic loader, pthreads
  Swift runtime    the rest of the Swift runtime and standard library
"""
import collections
import re
import subprocess
import sys

ARC = re.compile(r'^swift_(retain|release|bridgeObjectRetain|bridgeObjectRelease|'
                 r'isUniquelyReferenced|unknownObjectRetain|unknownObjectRelease|nonatomic_)')
MODULES = [
    ('start-up page release (one-off)', re.compile(r'StartupPages')),
    ('HTTP1', re.compile(r'^\$s(5HTTP1|11HTTPMessage)')),
    ('HTTP2', re.compile(r'^\$s5HTTP2')),
    ('EventLoop module', re.compile(r'^\$s9EventLoop')),
    ('proxy logic', re.compile(r'^\$s(5Proxy|12TokenManager|6Config|5Admin|12TokenSidecar|13token_sidecar)')),
]


# Reference-count entry points whose calls are counted (calls among them, as a bridge-object
# retain calling swift_retain, are not counted twice). callgrind names a function called again
# inside its own call tree `name'2` (a release that deallocates an object whose fields are
# released): those count too.
REFCOUNT = re.compile(r"^swift_(retain|release|retain_n|release_n|bridgeObjectRetain|bridgeObjectRelease|"
                      r"bridgeObjectRetain_n|bridgeObjectRelease_n|unknownObjectRetain|unknownObjectRelease|"
                      r"unownedRetain|unownedRelease)('\d+)?$")


def parse(path, refcounts=None, by_address=False):
    """Exclusive cost per (object, function) of one callgrind file (name compression aware);
    `refcounts`, when given, gets the number of calls to each reference-count entry point from
    outside them. `by_address`: per (object, function, instruction address) instead, from a dump
    written with `--dump-instr=yes` (addresses absolute, or relative to the previous line's:
    `+n`, `-n`, `*`)."""
    names, objects = {}, {}
    cost = collections.Counter()
    fn = ob = cfn = None
    address = 0
    after_call = False
    dumped_addresses = False
    for line in open(path, encoding='utf-8', errors='replace'):
        line = line.rstrip('\n')
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in '+-*':
            parts = line.split()
            if by_address:
                token = parts[0]
                if token.startswith('0x'):
                    address = int(token, 16)
                elif head in '+-':
                    step = int(token[1:], 16) if token[1:].startswith('0x') else int(token[1:])
                    address += step if head == '+' else -step
            if after_call:  # the inclusive cost of a call (at the call's address): not the caller's own
                after_call = False
                continue
            if len(parts) >= 2 and fn is not None:
                cost[(ob, fn, address) if by_address else (ob, fn)] += int(parts[-1])
            continue
        if line.startswith('positions:'):
            dumped_addresses = 'instr' in line.split()
        key, _, value = line.partition('=')
        if key in ('ob', 'cob', 'fn', 'cfn'):
            m = re.match(r'\((\d+)\)(?: (.*))?$', value)
            if m:
                table = objects if key in ('ob', 'cob') else names
                if m.group(2) is not None:
                    table[m.group(1)] = m.group(2)
                value = table.get(m.group(1), value)
            if key == 'ob':
                ob = value
            elif key == 'fn':
                fn = value
            elif key == 'cfn':
                cfn = value
        elif key == 'calls':
            after_call = True
            if refcounts is not None and cfn and REFCOUNT.match(cfn) and not (fn and REFCOUNT.match(fn)):
                refcounts[cfn] += int(value.split()[0])
    if by_address and not dumped_addresses:
        sys.exit(f'{path}: no instruction addresses (record with valgrind --dump-instr=yes)')
    return cost


def hot_code(path, requests):
    """Prints the cache lines and pages of code that ran at least once every two requests."""
    cost = parse(path, by_address=True)
    lines, pages = collections.defaultdict(set), collections.defaultdict(set)
    for (ob, fn, address), c in cost.items():
        if c / requests < 0.5:
            continue
        name = (ob or '?').rsplit('/', 1)[-1]
        for key in (name, f'{name}: {group(ob, fn)}'):
            lines[key].add(address >> 6)
            pages[key].add(address >> 12)
    objects = sorted((k for k in lines if ': ' not in k), key=lambda k: -len(lines[k]))
    print('| object (group) | hot code KiB | 64 B lines | 4 KiB pages |')
    print('|---|--:|--:|--:|')
    for name in objects:
        print(f'| {name} | {len(lines[name]) * 64 / 1024:.1f} | {len(lines[name])} | {len(pages[name])} |')
        groups = sorted((k for k in lines if k.startswith(name + ': ')), key=lambda k: -len(lines[k]))
        # (Groups only for the executable: another object's functions are not a module's.)
        if any(key.endswith((': proxy logic', ': HTTP2', ': HTTP1')) for key in groups):
            for key in groups:
                print(f'| &nbsp;&nbsp;{key[len(name) + 2:]} | {len(lines[key]) * 64 / 1024:.1f} | {len(lines[key])} | {len(pages[key])} |')
    total = sum(len(lines[k]) for k in objects)
    print(f'| **total** | **{total * 64 / 1024:.1f}** | **{total}** | **{sum(len(pages[k]) for k in objects)}** |')


def group(ob, fn):
    if ARC.match(fn):
        return 'Swift ARC'
    if ob and 'libevent' in ob:
        return 'libevent'
    if ob and 'libnghttp2' in ob:
        return 'nghttp2'
    if ob and re.search(r'/lib(ssl|crypto)[.-]', ob):
        return 'OpenSSL'
    for name, pattern in MODULES:
        if pattern.search(fn):
            return name
    if ob and re.search(r'/(libc|libm|ld-linux|libpthread)[.-]', ob):
        return 'libc'
    if fn.startswith(('__', 'mem', 'str', 'malloc', 'free', 'clock_', 'epoll', 'read', 'write', 'cfree')):
        return 'libc'
    return 'Swift runtime and stdlib'


def main():
    args = sys.argv[1:]
    top = 0
    by_object = '--by-object' in args
    if by_object:
        args.remove('--by-object')
    if '--hot-code' in args:
        args.remove('--hot-code')
        if len(args) != 2:
            sys.exit(__doc__)
        hot_code(args[0], float(args[1]))
        return
    if '--top' in args:
        i = args.index('--top')
        top = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2 or (by_object and top):
        sys.exit(__doc__)
    path, requests = args[0], float(args[1])
    refcounts = collections.Counter()
    cost = parse(path, refcounts)
    if by_object:
        objects = collections.Counter()
        for (ob, _), c in cost.items():
            objects[(ob or '?').rsplit('/', 1)[-1]] += c
        print('| object | instructions/request |')
        print('|---|--:|')
        for name, c in objects.most_common():
            if c / requests >= 0.5:
                print(f'| {name} | {c / requests:,.0f} |')
        print(f'| **total** | **{sum(objects.values()) / requests:,.0f}** |')
        return
    groups = collections.Counter()
    for (ob, fn), c in cost.items():
        groups[group(ob, fn)] += c
    total = sum(groups.values())
    print('| where | instructions/request |')
    print('|---|--:|')
    for name, c in groups.most_common():
        print(f'| {name} | {c / requests:,.0f} |')
    print(f'| **total** | **{total / requests:,.0f}** |')
    retains = sum(c for name, c in refcounts.items() if 'etain' in name)
    releases = sum(c for name, c in refcounts.items() if 'elease' in name)
    print()
    print(f'reference-count calls per request: {retains / requests:,.1f} retains, {releases / requests:,.1f} releases'
          ' (calls on nil or immortal objects included: those return without an atomic operation)')
    if top:
        rows = cost.most_common(top)
        demangled = subprocess.run(['swift', 'demangle', '--simplified'], input='\n'.join(fn for (_, fn), _ in rows),
                                   capture_output=True, text=True).stdout.splitlines()
        print()
        for ((ob, fn), c), name in zip(rows, demangled or [fn for (_, fn), _ in rows]):
            print(f'{c / requests:8,.0f}  {group(ob, fn):<26} {name[:110]}')


if __name__ == '__main__':
    main()
