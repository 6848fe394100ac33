"""The conformance kit: score any implementation of the protocol through its command line
and its files (`lernie-check conform`), and audit the workspaces it leaves
(`lernie-check audit`, :mod:`lernie_stateful.audit`)."""
