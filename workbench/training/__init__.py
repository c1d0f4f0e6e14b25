"""Training: recipes (what a run does), the Trainer (updates, checkpoints, resume), and the models fitted in one
go instead (:data:`FITS`)."""
from .wmf import train_wmf

# model name -> fit(cfg, out, show_progress=True) -> summary dict (pairs, loss, seconds): the models of
# workbench.models.FITTED, which the Trainer does not train
FITS = {"wmf": train_wmf}
