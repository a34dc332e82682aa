"""The planner command line: parse options, call one library function, render."""
