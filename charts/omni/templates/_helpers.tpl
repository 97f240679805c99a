{{/* Names, labels and the pieces every component's Deployment shares. */}}

{{- define "omni.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name: "<release>" when it already contains the chart name, else "<release>-omni". */}}
{{- define "omni.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "omni.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "omni.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "talker"). */}}
{{- define "omni.selectorLabels" -}}
app.kubernetes.io/name: {{ include "omni.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "omni.componentLabels" -}}
{{ include "omni.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "omni.componentName" -}}
{{- printf "%s-%s" (include "omni.fullname" .root) .component -}}
{{- end -}}

{{- define "omni.image" -}}
{{- $c := index .root.Values .component -}}
{{- printf "%s/%s:%s" .root.Values.imageRegistry $c.image.repository (default (default .root.Chart.AppVersion .root.Values.imageTag) $c.image.tag) -}}
{{- end -}}

{{- define "omni.redisUrl" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s-redis:%d/0" (include "omni.fullname" .) (int .Values.redis.port) -}}
{{- else -}}
{{- required "redis.externalUrl is required when redis.enabled is false" .Values.redis.externalUrl -}}
{{- end -}}
{{- end -}}

{{- define "omni.apiKeysSecret" -}}
{{- default (printf "%s-api-keys" (include "omni.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}

{{- define "omni.apiKeysEnabled" -}}
{{- if or .Values.apiKeys.existingSecret .Values.apiKeys.keys -}}true{{- end -}}
{{- end -}}

{{/* A backend's headless Service as host:port: the gateway resolves it to one address per ready pod. */}}
{{- define "omni.backendTarget" -}}
{{- $c := index .root.Values .component -}}
{{- printf "%s.%s.svc.cluster.local:%d" (include "omni.componentName" .) .root.Release.Namespace (int $c.port) -}}
{{- end -}}

{{- define "omni.prometheusCRDs" -}}
{{- if or .Values.monitoring.forceCRDs (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}true{{- end -}}
{{- end -}}
