"""The compiled kernels' machinery: numba kernels compiled or interpreted, their one signature each, and the machine code shipped in the wheel."""
