"""Driver (ours) for openai/whisper's model.py and audio.py: a tiny Whisper (2 layers, 32 wide), a log-mel
spectrogram of one second of noise made by audio.py on the model's device, padded, then the encoder, the decoder
with a kv cache as decoding does it, and a training step."""

import numpy as np
import torch

from whisper.audio import log_mel_spectrogram, pad_or_trim
from whisper.model import ModelDimensions, Whisper

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
dims = ModelDimensions(n_mels=80, n_audio_ctx=50, n_audio_state=32, n_audio_head=2, n_audio_layer=1,
                       n_vocab=60, n_text_ctx=16, n_text_state=32, n_text_head=2, n_text_layer=1)
model = Whisper(dims).to(device)
audio = np.random.default_rng(0).standard_normal(16000).astype(np.float32) * 0.1
mel = log_mel_spectrogram(audio, 80, padding=0, device=device)
mel = pad_or_trim(mel, 100)
tokens = torch.randint(0, 60, (1, 6), device=device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
logits = model(mel.unsqueeze(0), tokens)
loss = torch.nn.functional.cross_entropy(logits[0, :-1], tokens[0, 1:])
opt.zero_grad()
loss.backward()
opt.step()
model.eval()
with torch.no_grad():
    feats = model.embed_audio(mel.unsqueeze(0))
    cache, hooks = model.install_kv_cache_hooks()
    out = model.decoder(tokens, feats, kv_cache=cache)
    out = model.decoder(tokens[:, -1:], feats, kv_cache=cache)
    for h in hooks:
        h.remove()
print("ok", tuple(out.shape), round(loss.item(), 3))
