#!/usr/bin/env python3
"""list-tests.py - print every test file under tests/ (for registration)."""
import glob
import os

os.chdir(os.path.dirname(os.path.abspath(__file__)))
for p in sorted(glob.glob('unit/test_*.c') + glob.glob('integration/t*.sh') +
                glob.glob('lint/*.py')):
    print(p)
