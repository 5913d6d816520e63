"""The benchmarks (`make bench`): one package, each bench a module run from the repository
root with the venv's interpreter, `python -m bench.<name>`; bench/README.md says how to run
each and what they show now. `bench.appliance` is the one launcher of the appliance as a
process (config, environment, readiness, errors) that every bench uses."""
