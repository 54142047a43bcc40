"""ResGen: efficient generative modeling with RVQ tokens (Kim, Moon, Lee & Cho, ICML 2025, arXiv 2412.10208).

A masked discrete-diffusion model over residual-vector-quantised tokens: masking removes a depth suffix at
every position (finest depths first), the network predicts the *sum* of the masked code vectors with a
mixture of Gaussians, and sampling residual-quantises that prediction, so T sampling steps suffice at any
RVQ depth.

``imagenet`` reads the paper's ImageNet images from a user's folder (torchvision's ImageFolder layout) for the
``paper_data`` experiment.
"""

from icml25.papers.resgen.baselines import ARRQ, DepthSequentialMask, TokenMaskGIT
from icml25.papers.resgen.data import (
    DigitFeatures,
    digits_patches,
    frechet_distance,
    images_to_patches,
    patches_to_images,
)
from icml25.papers.resgen.imagenet import (
    list_image_folder,
    load_image,
    load_imagenet,
    patches_to_rgb,
    rgb_to_patches,
)
from icml25.papers.resgen.model import (
    MaskedTokenTrunk,
    MoGParams,
    ResGenConfig,
    ResGenTransformer,
    masked_counts,
    mog_nll,
    sample,
    select_prefix_tokens,
    train_generator,
)
from icml25.papers.resgen.rvq import ResidualVQ, cumulative_masked_embedding, forward_mask, mask_schedule

__all__ = [
    "ARRQ", "DepthSequentialMask", "DigitFeatures", "MaskedTokenTrunk", "MoGParams", "ResGenConfig",
    "ResGenTransformer", "ResidualVQ", "TokenMaskGIT", "cumulative_masked_embedding", "digits_patches", "forward_mask",
    "frechet_distance", "images_to_patches", "list_image_folder", "load_image", "load_imagenet", "mask_schedule",
    "masked_counts", "mog_nll", "patches_to_images", "patches_to_rgb", "rgb_to_patches", "sample",
    "select_prefix_tokens", "train_generator",
]
