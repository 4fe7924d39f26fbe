#!/usr/bin/env python3
"""Checks that a Windows DLL exports exactly the functions the public headers declare RV_API.

usage: check_dll_exports.py OBJDUMP DLL INCLUDE_DIR

Reads every header under INCLUDE_DIR (rvis.h and rvis/*.h), lists the names declared with
RV_API, lists the DLL's export table (OBJDUMP -p), and fails naming every function that
is declared but not exported (RV_SHARED/RV_BUILDING_LIBRARY missing from the build) and
every export that is not declared (an internal function leaking out of the DLL)."""
import pathlib
import re
import subprocess
import sys


def declared(include_dir):
    names = set()
    headers = [include_dir / 'rvis.h'] + sorted((include_dir / 'rvis').glob('*.h'))
    for header in headers:
        text = header.read_text(encoding='utf-8')
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)       # comments
        text = re.sub(r'//[^\n]*', ' ', text)
        text = re.sub(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)  # where RV_API is defined
        for match in re.finditer(r'\bRV_API\b([^(;]*?)\b([A-Za-z_]\w*)\s*\(', text):
            names.add(match.group(2))
    return names


def exported(objdump, dll):
    dump = subprocess.run([objdump, '-p', str(dll)], capture_output=True, text=True, check=True).stdout
    table = dump.split('[Ordinal/Name Pointer] Table', 1)
    if len(table) < 2:
        return set()
    names = set()
    for line in table[1].splitlines()[1:]:
        match = re.match(r'\s*\[\s*\d+\]\s+(\S+)\s*$', line)
        if not match:
            break
        names.add(match.group(1))
    return names


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    objdump, dll, include_dir = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    api = declared(include_dir)
    exports = exported(objdump, dll)
    # the core header alone declares several; finding none means the parser broke
    if len(api) < 8:
        sys.exit(f'found only {len(api)} RV_API declarations under {include_dir}: parser broken?')
    missing = sorted(api - exports)
    extra = sorted(exports - api)
    for name in missing:
        print(f'declared RV_API but not exported: {name}')
    for name in extra:
        print(f'exported but not declared RV_API: {name}')
    if missing or extra:
        sys.exit(f'{dll.name}: {len(missing)} missing, {len(extra)} extra of {len(api)} public functions')
    print(f'{dll.name} exports exactly the {len(api)} public functions')


main()
