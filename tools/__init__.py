"""This repository's own tooling, outside the installable package (``workbench`` never imports it): the docs'
fact generator and the measurements it writes from (``bash scripts/docs``), and the GPU campaign's packing,
device steps and bundles (``bash scripts/gpu_campaign``). Run from a checkout, with the repository root on the path."""
