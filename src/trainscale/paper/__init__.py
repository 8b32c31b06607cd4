"""The paper being reproduced (Fernandez et al., arXiv 2411.13055): its setup and its claims
(:mod:`.setup`)."""
