/**
 * What the side panel says when the kernel has no API key for its model: a short line naming the
 * configured provider, the one thing to do, and (behind a Details toggle) the other ways to get a
 * model: another provider, a local Ollama, or the offline demo. The provider and the variable its
 * key is read from come from the kernel's hello; never a key itself. Pure (no DOM), so it is
 * unit-tested.
 */

/** How the panel names each provider the kernel knows (`notebook/config.py` PROVIDERS). */
const PROVIDER_NAMES: { [provider: string]: string } = {
  anthropic: 'Anthropic',
  openai: 'OpenAI',
  openrouter: 'OpenRouter',
  ollama: 'Ollama',
  vllm: 'vLLM',
  lmstudio: 'LM Studio',
  llamacpp: 'llama.cpp'
};

export function providerName(provider: string | null | undefined): string {
  return PROVIDER_NAMES[provider ?? 'anthropic'] ?? provider ?? 'Anthropic';
}

export interface KeyHelp {
  /** One short sentence: what is missing. */
  title: string;
  /** The one thing to do, in words. */
  step: string;
  /** The line to run in a notebook cell (the key is typed into a password box, not the file). */
  code: string;
  /** The other ways, shown behind "Details". */
  details: string[];
}

/** The help for a kernel whose `provider` has no key in `keyEnv`. */
export function keyHelp(
  provider: string | null | undefined,
  keyEnv: string | null | undefined
): KeyHelp {
  const name = providerName(provider);
  const variable = keyEnv || 'ANTHROPIC_API_KEY';
  const details = [
    `Or set ${variable} in the shell that starts Jupyter (export ${variable}=…) and restart the kernel.`
  ];
  const others: [string, string][] = [
    [
      'anthropic',
      "Anthropic: set ANTHROPIC_API_KEY (%config Codelia.provider = 'anthropic')."
    ],
    ['openai', "OpenAI: %config Codelia.provider = 'openai' and set OPENAI_API_KEY."],
    [
      'openrouter',
      "OpenRouter: %config Codelia.provider = 'openrouter' and set OPENROUTER_API_KEY."
    ]
  ];
  for (const [id, text] of others) {
    if (id !== (provider ?? 'anthropic')) {
      details.push(text);
    }
  }
  details.push(
    "A local Ollama, no key needed: %config Codelia.model = 'ollama:qwen3-coder'.",
    'No key at all: try the offline demo with %codelia --demo in a cell.'
  );
  return {
    title: `No ${name} API key in this kernel.`,
    step: `Run this in a cell and paste your ${name} key:`,
    code: `import os, getpass; os.environ['${variable}'] = getpass.getpass('${name} API key: ')`,
    details
  };
}
