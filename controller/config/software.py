"""The table config's [software] table: which release keys may sign the manifest of the installed code, and whether
the table refuses to open on code none of them vouches for (605a.4(c), docs/software.md).

Its own module, importing only pydantic and the key decoder, so that `tablectl verify-software --config` reads it
without importing the code it checks (a tampered game module cannot stop the check from reporting it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.config.keys import RELEASE_KEY_FIX, decode_public_key


class SoftwareSettings(BaseModel):
    """The check of the installed code against its signed release manifest at start (605a.4(c), docs/software.md)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    release_keys: list[str] = Field(
        [], description="base64 Ed25519 public keys of the release keys a manifest may be signed with"
    )
    require_verified: bool | None = Field(
        None,
        description="refuse to open the table unless the code is verified against a manifest signed by a release "
        "key; default: true when release_keys are given, false otherwise (a checkout, the demo). Altered, missing "
        "or extra files, and a manifest altered or signed by an unlisted key, refuse the table either way",
    )
    manifest: str | None = Field(
        None, description="the signed manifest; default: tablectl-release.json beside the installed packages"
    )

    @field_validator("release_keys")
    @classmethod
    def _are_keys(cls, keys: list[str]) -> list[str]:
        for i, key in enumerate(keys):
            try:
                decode_public_key(key, RELEASE_KEY_FIX)
            except ValueError as err:
                raise ValueError(f"release_keys[{i}] {err}") from None
        if len(set(keys)) != len(keys):
            raise ValueError("a release key is listed twice: list each once")
        return keys

    @property
    def required(self) -> bool:
        return bool(self.release_keys) if self.require_verified is None else self.require_verified
